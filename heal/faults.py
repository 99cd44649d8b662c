"""The network's faults, told apart from the model's: a drop, a stall, a broken protocol.

A response can end badly for two reasons that must never be confused. The model may write a
call toolwire rejects (healing asks it again, with the true message); or the network may fail
the response: the connection drops or is reset, the upstream falls silent past the read
timeout, or its bytes break HTTP. A network fault says nothing about the model, so it is not
healed like a rejected call (asking the model again with an error message, ``max_retries``
times, a stall costing ``read_timeout`` on every one): the session reacts to it as a fault
(:mod:`toolwire.heal.session`, ``docs/healing.md``, "Faults of the network").

What the evidence is, as the pipeline reports it (``core/reading.py``): a source that raised
while being read is a fatal ``transport`` :class:`~toolwire.core.events.ProviderError` whose
``code`` is the exception's class name; a stream that simply stopped (a clean end with no
finish and no terminator) raises nothing and finishes ``disconnected``. A shell that catches
the exception itself (a whole body that could not be read, a retry that could not be sent)
passes it to :func:`exception_fault`. The class name is all that is needed, so nothing here
imports httpx: every ``...Timeout`` and ``...TimeoutError`` is a stall (httpx's
``ReadTimeout``, LiteLLM's ``Timeout``, openai's ``APITimeoutError``); httpx's
``RemoteProtocolError`` is a drop when the peer closed before the end of the body (its words:
"peer closed connection", "Server disconnected"), garbage otherwise, as is every other protocol
or decoding error; everything else (``ReadError``, ``ConnectError``, a reset, LiteLLM's
``APIConnectionError``) is a drop.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..core.events import Finish, ProviderError

__all__ = ["Fault", "FaultKind", "exception_fault", "stream_fault"]

#: ``dropped`` (the connection ended before the response did, reset included),
#: ``timeout`` (nothing came for the read timeout), ``protocol_error`` (bytes that break the
#: protocol).
FaultKind = Literal["dropped", "timeout", "protocol_error"]

_PROTOCOL = frozenset(
    {"RemoteProtocolError", "LocalProtocolError", "ProtocolError", "DecodingError"}
)
#: How httpx words a ``RemoteProtocolError`` that is a closed connection, not garbage.
_CLOSED = ("peer closed connection", "server disconnected", "connection closed")

_WHAT = {
    "dropped": "the connection to the upstream dropped before its response ended",
    "timeout": "the upstream sent nothing for the read timeout",
    "protocol_error": "the upstream's response broke the HTTP protocol",
}


class Fault(msgspec.Struct, frozen=True):
    """One fault of the network: its kind and what was seen (an exception, a clean stop)."""

    kind: FaultKind
    seen: str

    @property
    def code(self) -> str:
        """The code the client's error carries: ``upstream_dropped``, ``upstream_timeout``,
        ``upstream_protocol_error``."""
        return f"upstream_{self.kind}"

    @property
    def status(self) -> int:
        """The HTTP status it stands for: 504 for a stall, 502 otherwise."""
        return 504 if self.kind == "timeout" else 502

    def message(self, resent: bool) -> str:
        """What the client is told: the fault, never the model (``resent``: the request was
        already sent again once)."""
        again = "; toolwire had sent the request again once" if resent else ""
        return (
            f"{_WHAT[self.kind]} ({self.seen}){again}. This is a fault of the network or of "
            "the upstream server, not of the model; no call was sent in place of one it was "
            "writing, and calls sent before this error stand."
        )


def fault_of(name: str, text: str) -> Fault:
    """The fault an exception of class ``name`` with message ``text`` stands for."""
    seen = f"{name}: {text}" if text else name
    if name.endswith(("Timeout", "TimeoutError")):
        return Fault("timeout", seen)
    if name in _PROTOCOL:
        lowered = text.lower()
        if name == "RemoteProtocolError" and any(words in lowered for words in _CLOSED):
            return Fault("dropped", seen)
        return Fault("protocol_error", seen)
    return Fault("dropped", seen)


def exception_fault(error: BaseException) -> Fault:
    """The fault ``error`` (raised by a read or a send of the upstream's) stands for."""
    return fault_of(type(error).__name__, str(error))


def stream_fault(fatal: ProviderError | None, finish: Finish | None) -> Fault | None:
    """The fault a read response ended in, or ``None`` when it ended as the upstream meant.

    ``finish`` is the response's finish: a fault is a response that never got its own
    (``disconnected``, or none); one whose finish was read is whole, whatever failed after it.
    ``fatal`` is its fatal error (a ``transport`` one is a raised read, its ``code`` the
    exception's class); with none, the stream simply stopped.
    """
    if finish is not None and finish.reason != "disconnected":
        return None
    if fatal is not None and fatal.kind == "transport":
        name = fatal.code or "transport error"
        prefix = f"the stream failed while being read: {name}: "
        text = fatal.message[len(prefix) :] if fatal.message.startswith(prefix) else ""
        return fault_of(name, text)
    return Fault("dropped", "the stream ended with no finish and no end marker")
