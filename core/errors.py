"""The exceptions toolwire raises, all in one small tree.

Bad *model output* is never an exception: a malformed tool call becomes a rejection event with
a typed reason, because a rollout must survive it. Exceptions are for bad *use* of the library
and for provider streams that cannot be read at all::

    ToolwireError
    ├── ConfigurationError      bad arguments to toolwire (unknown provider, bad tool definition)
    ├── ProviderStreamError     the provider stream itself is broken beyond an in-band error event
    │   └── SourceTypeError     the ``source`` given to collect/stream is not a stream we can read
    └── HistoryError            a history handed to toolwire is not well formed

``ToolwireError`` subclasses ``Exception`` (never ``BaseException``), so cancellation and
``KeyboardInterrupt`` always pass through toolwire untouched.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "HistoryError",
    "ProviderStreamError",
    "SourceTypeError",
    "ToolwireError",
]


class ToolwireError(Exception):
    """Base class of every exception raised by toolwire."""


class ConfigurationError(ToolwireError, ValueError):
    """toolwire was called with arguments it cannot work with."""


class ProviderStreamError(ToolwireError):
    """The provider stream could not be read as a stream of that provider at all."""


class SourceTypeError(ProviderStreamError, TypeError):
    """The ``source`` is neither bytes, an async iterable of bytes, nor SDK chunk objects."""


class HistoryError(ToolwireError, ValueError):
    """A message history is not well formed (unpaired call ids, unparseable arguments...)."""
