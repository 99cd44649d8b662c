"""Which tool-parser error readers each provider name gets: the built-in ones, and yours.

A reader (:data:`~toolwire.core.parser_errors.ParserErrorReader`) knows one server family's
error shape and lives with its adapter: Ollama's in :mod:`.ollama.parser_errors`, llama-server's,
vLLM's and LM Studio's in :mod:`.openai_chat` (:mod:`~.openai_chat.llama_server_errors`,
:mod:`~.openai_chat.vllm_errors`, :mod:`~.openai_chat.lmstudio_errors`); every server's words,
with their provenance, are one table, :data:`~.parser_wordings.WORDINGS`. A provider name gets
the readers of the servers that may answer on its endpoint: ``llama-server`` llama.cpp's,
``vllm`` vLLM's, ``lmstudio`` LM Studio's and llama.cpp's, ``ollama`` and ``ollama-openai``
Ollama's, ``openai-compatible`` (any server) all of them; ``anthropic`` and
``openai-responses`` those of the servers that serve those endpoints too. Hosted APIs never
send these bodies, and each reader's words are specific, so an unknown body stays what it was.

:func:`register_parser_error` adds a reader (for some provider names, or all): a pipeline built
after that reads its provider's errors with it too (a pipeline takes its readers when built).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from ..core.errors import ConfigurationError
from ..core.parser_errors import ParserErrorReader

__all__ = ["parser_error_readers", "register_parser_error"]

#: (module under ``toolwire.adapters``, function) -> the provider names it reads for. A server
#: is read on every endpoint it serves: llama-server and Ollama also serve ``/v1/messages`` and
#: ``/v1/responses``, vLLM and LM Studio ``/v1/responses``; LM Studio's llama.cpp engine passes
#: llama.cpp's words on.
_BUILT_IN: dict[tuple[str, str], frozenset[str]] = {
    ("ollama.parser_errors", "read_ollama_parser_error"): frozenset(
        {"ollama", "ollama-openai", "openai-compatible", "anthropic", "openai-responses"}
    ),
    ("openai_chat.llama_server_errors", "read_llama_server_error"): frozenset(
        {"llama-server", "lmstudio", "openai-compatible", "anthropic", "openai-responses"}
    ),
    ("openai_chat.vllm_errors", "read_vllm_error"): frozenset(
        {"vllm", "openai-compatible", "anthropic", "openai-responses"}
    ),
    ("openai_chat.lmstudio_errors", "read_lmstudio_error"): frozenset(
        {"lmstudio", "openai-compatible", "openai-responses"}
    ),
}

#: Readers a user registered, each with its provider names (``None``: every provider).
_REGISTERED: list[tuple[ParserErrorReader, frozenset[str] | None]] = []


def register_parser_error(
    reader: ParserErrorReader, providers: Iterable[str] | None = None
) -> None:
    """Read error bodies with ``reader`` too, for ``providers`` (names) or every provider.

    ``reader(status, body)`` returns :class:`~toolwire.core.parser_errors.ParserErrorFacts` for
    a body it knows (``status`` is ``None`` for an error that came in band), else ``None``.
    It is tried after the built-in readers, by pipelines built after this call.
    """
    if not callable(reader):
        raise ConfigurationError(f"a parser-error reader must be callable, got {reader!r}")
    if isinstance(providers, str):
        raise ConfigurationError("providers must be a collection of provider names, not a str")
    names = frozenset(providers) if providers is not None else None
    _REGISTERED.append((reader, names))


def parser_error_readers(provider: str) -> tuple[ParserErrorReader, ...]:
    """The readers of provider name ``provider``'s error bodies, built-in first."""
    readers: list[ParserErrorReader] = []
    for (module, function), names in _BUILT_IN.items():
        if provider in names:
            readers.append(getattr(importlib.import_module(f"{__package__}.{module}"), function))
    readers.extend(reader for reader, names in _REGISTERED if names is None or provider in names)
    return tuple(readers)
