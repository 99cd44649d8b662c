"""Provider names accepted by ``Pipeline``, ``collect``, ``stream`` and ``replay --provider``.

Each name leads to a :class:`~toolwire.adapters.provider.Provider`: a wire format (its mapper), a
history format, a request reader and, for the formats toolwire heals, a healing format. This is
the one registry: the pipeline, the healing transport and the proxy all ask it. Several names
share a wire format; the name still matters: it picks the server's profile (its quirks) and
becomes the ``gen_ai.provider.name`` on spans and metrics. Each adapter package is imported only
when one of its names is first used (the healing transport asks for every format it heals).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ..core.errors import ConfigurationError
from ..core.mapper import MapperSettings, ProviderMapper
from ..core.request import RequestFacts
from ..core.wire import HealSettings, WireFormat
from .history import HistoryFormat
from .openai_chat import adapt as openai_chat_adapt
from .openai_chat.profiles import CHAT_PROFILES
from .provider import Provider

__all__ = [
    "adapt_messages",
    "chat_provider_names",
    "check_max_tokens",
    "closes_after_stream",
    "heal_formats",
    "history_format",
    "open_mapper",
    "provider",
    "provider_names",
    "read_request",
    "reads_text_calls_behind",
    "reask_format",
    "upstream_chat_provider",
    "upstream_names",
]

#: provider name -> the adapter package (under ``toolwire.adapters``) that defines it.
_PACKAGES: dict[str, str] = {
    **{name: "openai_chat" for name in CHAT_PROFILES},
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "ollama": "ollama",
}


#: The providers already imported, by name.
_FOUND: dict[str, Provider] = {}


def provider_names() -> list[str]:
    """Every accepted provider name, sorted."""
    return sorted(_PACKAGES)


def provider(name: str) -> Provider:
    """The provider of ``name``; :class:`ConfigurationError` for an unknown name."""
    package = _PACKAGES.get(name)
    if package is None:
        raise ConfigurationError(
            f"unknown provider {name!r}; expected one of: {', '.join(provider_names())}"
        )
    found = _FOUND.get(name)
    if found is None:
        # Imported the first time a name is asked for (four times per healed request after it:
        # import_module is a dict lookup, but not a free one).
        module = importlib.import_module(f"{__package__}.{package}")
        found = _FOUND[name] = module.PROVIDERS[name]
    return found


def check_max_tokens(max_tokens: object) -> None:
    """``max_tokens`` is a positive int or ``None`` (``bool`` is an int, and is not a limit)."""
    if max_tokens is not None and (
        not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
    ):
        raise ConfigurationError(f"max_tokens must be a positive int, got {max_tokens!r}")


def open_mapper(name: str, settings: MapperSettings | None = None) -> ProviderMapper:
    """A fresh mapper for one stream of provider ``name``."""
    settings = settings or MapperSettings()
    check_max_tokens(settings.max_tokens)
    return provider(name).open_mapper(settings)


def history_format(name: str) -> HistoryFormat:
    """The history format (assistant turn, tool results, check) of provider ``name``."""
    return provider(name).history


def adapt_messages(name: str, messages: Sequence[Any]) -> list[Any]:
    """``messages`` in the form provider ``name``'s server accepts (a copy; see
    :mod:`toolwire.adapters.openai_chat.adapt`). Only Chat Completions profiles adapt; every
    other provider's messages come back as they are."""
    provider(name)  # checks the name
    profile = CHAT_PROFILES.get(name)
    if profile is None:
        return list(messages)
    return openai_chat_adapt.adapt_messages(messages, profile)[0]


def read_request(name: str, body: object) -> RequestFacts:
    """The facts of a request body in provider ``name``'s shape (a mapping, or JSON bytes)."""
    if isinstance(body, bytes | bytearray | str):
        try:
            body = msgspec.json.decode(body)
        except msgspec.DecodeError as error:
            raise ConfigurationError(f"request is not JSON: {error}") from None
    if not isinstance(body, Mapping):
        raise ConfigurationError(
            f"request must be the JSON object that was sent, got {type(body).__name__}"
        )
    return provider(name).read_request(body)


def chat_provider_names() -> list[str]:
    """Every provider name that reads Chat Completions (each a server profile), sorted."""
    return sorted(CHAT_PROFILES)


def upstream_names() -> list[str]:
    """Every name an upstream may be given (``HealingTransport(provider=...)``, ``toolwire
    serve --provider``), sorted: what kind of server it is. Each Chat Completions name, and
    each other provider whose server serves Chat Completions too (``ollama``)."""
    return sorted(
        {*CHAT_PROFILES, *(n for n in _PACKAGES if n not in CHAT_PROFILES and _chat_of(n))}
    )


def _chat_of(name: str) -> str | None:
    return name if name in CHAT_PROFILES else provider(name).chat_provider


def upstream_chat_provider(upstream: str) -> str:
    """The Chat Completions provider name an upstream named ``upstream`` is healed with: the
    name itself, or its server's Chat name (``ollama``: ``ollama-openai``).
    :class:`ConfigurationError` when ``upstream`` names no server that serves Chat Completions.
    """
    chat = _chat_of(upstream) if upstream in _PACKAGES else None
    if chat is None:
        raise ConfigurationError(
            f"provider names the kind of server the upstream is; {upstream!r} is not one of "
            f"the names it takes ({', '.join(upstream_names())})"
        )
    return chat


def reads_text_calls_behind(name: str, upstream: str) -> bool:
    """Whether provider ``name``'s responses are read for calls left in the text when they come
    from an upstream named ``upstream`` (the healing's one setting, ``docs/healing.md``).

    Yes where ``name`` itself reads them (a local server's Chat profile, native Ollama), and
    where local servers serve ``name``'s endpoint too (:attr:`Provider.served_by_local_servers`:
    Anthropic Messages, Responses) and ``upstream`` is a server whose calls are read in the text.
    """
    entry = provider(name)
    if entry.reads_text_calls:
        return True
    return entry.served_by_local_servers and provider(upstream).reads_text_calls


def closes_after_stream(upstream: str) -> bool:
    """Whether a server of kind ``upstream`` (:func:`upstream_names`) closes its connection
    after every streamed answer, whatever its headers say (its profile's
    ``closes_after_stream``: llama-server). :class:`ConfigurationError` for an unknown kind."""
    return CHAT_PROFILES[upstream_chat_provider(upstream)].closes_after_stream


def heal_formats(upstream: str, settings: HealSettings | None = None) -> list[WireFormat]:
    """The healing formats of a transport, one per endpoint: Chat Completions first, then the
    others in the order their endpoints are tried.

    ``upstream`` says what kind of server the upstream is (:func:`upstream_names`). Many names
    read Chat Completions; the upstream's (:func:`upstream_chat_provider`: its server profile
    decides how history is replayed and which evidence names the token limit) heals
    ``/chat/completions``; every other provider that has a healing format heals its own
    endpoint. :class:`ConfigurationError` when ``upstream`` is none of those names.
    """
    chat_provider = upstream_chat_provider(upstream)
    settings = msgspec.structs.replace(
        settings or HealSettings(),
        upstream=upstream,
        upstream_local=provider(upstream).reads_text_calls,
    )
    names = [chat_provider, *(name for name in _PACKAGES if name not in CHAT_PROFILES)]
    formats: list[WireFormat] = []
    for name in names:
        opener = provider(name).open_heal_format
        opened = opener(settings) if opener is not None else ()
        formats += opened if isinstance(opened, tuple) else (opened,)
    return formats


def reask_format(name: str) -> WireFormat | None:
    """The healing format of provider ``name``, as a pipeline of that name asks its own server
    again (``Pipeline.constrained_request``): the upstream is the server ``name`` names (a local
    server's Chat profile, or the hosted API of a format); ``None`` when it is not healed."""
    entry = provider(name)
    opener = entry.open_heal_format
    if opener is None:
        return None
    settings = HealSettings(upstream=name, upstream_local=entry.reads_text_calls)
    opened = opener(settings)
    return opened[0] if isinstance(opened, tuple) else opened
