"""What every provider adapter offers the pipeline runner.

An adapter is a sans-I/O *mapper*: it is fed what arrives (raw body bytes, or SDK chunk objects)
and returns typed events; :meth:`ProviderMapper.finish` is called once when the source ends and
returns the closing events (open calls, ``Finish``, ``StreamEnd``). The async shells in
``toolwire.pipeline.runner`` do the I/O. A mapper is created per stream by its factory, so one
configured adapter serves any number of concurrent streams.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .events import Event

__all__ = ["MapperFactory", "ProviderMapper", "cap_text"]

#: How many characters of an offending payload are kept in a ProviderError.
RAW_CAP = 500


def cap_text(data: bytes | str, cap: int = RAW_CAP) -> str:
    """The first ``cap`` characters of an offending payload, for error events and messages."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes | bytearray) else data
    if len(text) <= cap:
        return text
    return f"{text[:cap]}… ({len(text)} characters)"


class ProviderMapper(Protocol):
    """Per-stream translation of one provider's wire format into toolwire events."""

    #: The ``gen_ai.provider.name`` of this provider (``openai``, ``anthropic``...).
    provider_name: str

    def feed_bytes(self, data: bytes, /) -> list[Event]:
        """Take the next bytes of the response body (any split)."""
        ...

    def feed_object(self, chunk: object, /) -> list[Event]:
        """Take one SDK chunk object (or a decoded JSON mapping)."""
        ...

    def finish(self, *, failed: bool = False) -> list[Event]:
        """The source ended; return the closing events. Called exactly once.

        ``failed``: reading the source raised (a dropped connection); nothing may be inferred
        from the end of the source then.
        """
        ...


MapperFactory = Callable[[int | None, bool], ProviderMapper]
