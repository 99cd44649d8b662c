"""The port every provider adapter implements, and what the pipeline tells it about a stream.

An adapter is a sans-I/O *mapper*: it is fed what arrives (raw body bytes, or SDK chunk objects)
and returns typed events; :meth:`ProviderMapper.finish` is called once when the source ends and
returns the closing events (open calls, ``Finish``, ``StreamEnd``). The async shell in
:mod:`toolwire.core.runner` does the I/O. A mapper is created per stream by its factory from
:class:`MapperSettings`, so one configured adapter serves any number of concurrent streams.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import msgspec

from .accumulate import DEFAULT_MAX_ARGUMENT_CHARS
from .events import Event, ProviderError
from .parser_errors import ParserErrorReader

__all__ = [
    "RAW_CAP",
    "MapperFactory",
    "MapperSettings",
    "ProviderMapper",
    "ReadsErrorBody",
    "cap_text",
    "quoted_object",
]

#: How many characters of an offending payload are kept in a ProviderError.
RAW_CAP = 500


def cap_text(data: bytes | str, cap: int = RAW_CAP) -> str:
    """The first ``cap`` characters of an offending payload, for error events and messages."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes | bytearray) else data
    if len(text) <= cap:
        return text
    return f"{text[:cap]}… ({len(text)} characters)"


def quoted_object(value: object, cap: int = RAW_CAP) -> str:
    """An SDK object's dump, capped, for an error: its ``repr``, or what can be said of it when
    even that fails (nested past Python's recursion limit: ``repr`` recurses)."""
    try:
        text = repr(value)
    except RecursionError:
        return f"(a {type(value).__name__} nested too deeply to quote)"
    return cap_text(text, cap)


class MapperSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What one stream's mapper is told before the first byte (from the options and request).

    ``stop_sequences`` is ``None`` when the request is not known, ``()`` when it had none.
    ``max_argument_chars``: a call whose arguments grow past it is marked ``too_large`` at once
    and no longer buffered. ``parser_errors``: the readers of the provider's known tool-parser
    error bodies (:mod:`toolwire.core.parser_errors`): an error one of them knows is the
    model's broken call, not an outage.
    """

    max_tokens: int | None = None
    stop_sequences: tuple[str, ...] | None = None
    argument_deltas: bool = True
    max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS
    parser_errors: tuple[ParserErrorReader, ...] = ()


class ProviderMapper(Protocol):
    """Per-stream translation of one provider's wire format into toolwire events."""

    #: The ``gen_ai.provider.name`` of this provider (``openai``, ``anthropic``...).
    provider_name: str

    @property
    def done(self) -> bool:
        """The provider's terminator was seen: the runner stops reading and closes the source."""
        ...

    def feed_bytes(self, data: bytes, /) -> list[Event]:
        """Take the next bytes of the response body (any split)."""
        ...

    def feed_object(self, chunk: object, /) -> list[Event]:
        """Take one SDK chunk object (or a decoded JSON mapping)."""
        ...

    def fail(self, error: ProviderError, /) -> list[Event]:
        """A fatal error found outside the body (an HTTP status): the turn ends in ``error``."""
        ...

    def finish(self, *, failed: bool = False) -> list[Event]:
        """The source ended; return the closing events. Called exactly once.

        ``failed``: reading the source raised (a dropped connection); nothing may be inferred
        from the end of the source then.
        """
        ...


MapperFactory = Callable[[MapperSettings], ProviderMapper]


@runtime_checkable
class ReadsErrorBody(Protocol):
    """A mapper that reads the body of a non-2xx response itself (every built-in one does).

    The runner calls :meth:`fail_response` instead of :meth:`ProviderMapper.fail` when the
    mapper has it, so that a body that is a known tool-parser failure (the whole body, not the
    capped quote in ``error.raw``) can become the model's call instead of an ``http_status``
    error. A mapper without it gets :meth:`ProviderMapper.fail`, as before.
    """

    def fail_response(self, error: ProviderError, status: int, body: bytes, /) -> list[Event]:
        """A non-2xx response: ``error`` is its ``http_status`` error, ``body`` its first bytes."""
        ...
