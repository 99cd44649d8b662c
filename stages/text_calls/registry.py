"""Which family readers exist, by name, and how a user adds one.

The built-in families are registered here, in one table; ``register_text_call_reader`` adds a
reader (a :class:`~toolwire.stages.text_calls.TextCallReader` subclass instance) under its
``family``; ``text_calls=["hermes", MyReader()]`` on a ``Pipeline`` picks families by name or
passes readers directly, without touching the registry.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...core.errors import ConfigurationError
from ._reading import TextCallReader
from .deepseek import DeepSeekReader
from .families import WRAPPED_READERS
from .gemma import FunctionGemmaReader, Gemma4Reader
from .glm import GlmMarkerlessReader, GlmReader
from .harmony import HarmonyReader, RecipientFirstHarmonyReader, StrippedHarmonyReader
from .kimi import KimiReader
from .llama import FunctionTagReader, PythonTagReader
from .minimax_m3 import MiniMaxM3Reader
from .mistral import MistralReader
from .muse import MuseMessageReader, MuseReplyReader
from .pythonic import PythonicReader
from .whole_json import WholeReplyJsonReader
from .xml_families import XML_FAMILIES
from .xml_reader import xml_reader

__all__ = [
    "BUILT_IN_READERS",
    "readers_for",
    "register_text_call_reader",
    "text_call_families",
]

#: Every built-in reader, in the order they are tried at one position (the first that finds a
#: block wins; where two share an opener their grammars exclude each other). The families that
#: differ only in their markers are rows of ``families.py``, one reader each.
BUILT_IN_READERS: tuple[TextCallReader, ...] = (
    *WRAPPED_READERS,
    *(xml_reader(spec) for spec in XML_FAMILIES),
    MiniMaxM3Reader(),
    GlmReader(),
    FunctionTagReader(),
    PythonTagReader(),
    MistralReader(),
    KimiReader(),
    DeepSeekReader(),
    HarmonyReader(),
    MuseMessageReader(),
    Gemma4Reader(),
    FunctionGemmaReader(),
    WholeReplyJsonReader(),
    PythonicReader(),
    RecipientFirstHarmonyReader(),
    MuseReplyReader(),
    StrippedHarmonyReader(),
    GlmMarkerlessReader(),
)

_REGISTRY: dict[str, list[TextCallReader]] = {}
for _reader in BUILT_IN_READERS:
    _REGISTRY.setdefault(_reader.family, []).append(_reader)


def register_text_call_reader(reader: TextCallReader) -> None:
    """Add ``reader`` under its ``family`` (after the readers already there).

    Registered families are part of ``text_calls="auto"`` wherever reading text calls is on.
    """
    if not isinstance(reader, TextCallReader):
        raise ConfigurationError(f"{reader!r} is not a TextCallReader")
    family = getattr(reader, "family", None)
    if not isinstance(family, str) or not family:
        raise ConfigurationError(f"{reader!r} has no family name")
    if not reader.whole_reply and not reader.openers:
        raise ConfigurationError(f"{reader!r} has no openers and does not read whole replies")
    _REGISTRY.setdefault(family, []).append(reader)


def text_call_families() -> tuple[str, ...]:
    """Every registered family name, sorted."""
    return tuple(sorted(_REGISTRY))


def readers_for(choice: Iterable[str | TextCallReader] | None) -> tuple[TextCallReader, ...]:
    """The readers of ``choice`` (family names or readers); ``None``: every registered one."""
    if choice is None:
        return tuple(reader for readers in _REGISTRY.values() for reader in readers)
    chosen: list[TextCallReader] = []
    for item in choice:
        if isinstance(item, TextCallReader):
            chosen.append(item)
            continue
        readers = _REGISTRY.get(item) if isinstance(item, str) else None
        if readers is None:
            raise ConfigurationError(
                f"unknown text-call family {item!r}; expected some of {list(text_call_families())}"
            )
        chosen.extend(readers)
    return tuple(chosen)
