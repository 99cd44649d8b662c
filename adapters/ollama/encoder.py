"""Judged events back into Ollama ``/api/chat`` lines: the Ollama mapper, run backwards.

:class:`OllamaLineEncoder` writes one client response as ``ChatResponse`` lines (plain dicts,
framed as NDJSON by :data:`~toolwire.adapters.ollama.healing.OLLAMA`). What a client can rely
on, beyond the contract every healing encoder keeps (:mod:`toolwire.adapters.openai_chat.encoder`
states it):

- Every line has the first response's ``model`` and a ``created_at``, and ``done: false`` until
  the last. Text goes out at once as ``message.content``, thinking as ``message.thinking``.
- An accepted call goes out whole, one per line, in ``message.tool_calls``: ``arguments`` an
  object (what Ollama sends and reads back), ``function.index`` the client's own 0, 1, 2...,
  and its ``id`` when the server gave one (``~h2`` for one already used).
- The last line is ``done: true`` with ``done_reason`` (``length`` for a cut at the token limit,
  else the server's, ``stop`` for a healed turn) and the counters ``prompt_eval_count`` /
  ``eval_count`` summed over the exchange.
- An error is a line ``{"error": "..."}``, last, as Ollama writes one mid-stream: the ``ollama``
  SDK raises ``ResponseError`` on it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.events import (
    Event,
    Finish,
    ProviderError,
    ResponseInfo,
    ToolCallReady,
    ToolCallRepaired,
    Usage,
)
from ...core.wire import WireItem
from ..encoding import EncoderState, call_arguments_object, error_payload, failure_type, re_encode

if TYPE_CHECKING:
    from ...core.wire import HealEncoder

__all__ = ["OllamaLineEncoder"]


class OllamaLineEncoder(EncoderState):
    """Writes one ``/api/chat`` response, line by line, for one client. Sans-I/O, not reusable."""

    #: The client's finish for a cut at the output-token limit.
    LENGTH: ClassVar[str] = "length"
    #: Ollama's finish for a turn that ends with calls (it says ``stop``).
    CALLS: ClassVar[str] = "stop"

    __slots__ = ("_created", "_model")

    def __init__(self) -> None:
        super().__init__()
        self._model: str | None = None
        self._created = datetime.now(UTC).isoformat().replace("+00:00", "Z")

    def _opened(self) -> list[WireItem]:
        return []  # Ollama has no opening line

    def _line(self, message: dict[str, Any], **fields: Any) -> dict[str, Any]:
        return {
            "model": self._model or "",
            "created_at": self._created,
            "message": {"role": "assistant", "content": "", **message},
            "done": False,
            **fields,
        }

    def info(self, event: ResponseInfo) -> list[WireItem]:
        """The response is known: take its model (only before anything went out)."""
        if not self._started:
            self._model = event.model
        out: list[WireItem] = []
        self._opening(out)
        return out

    def text(self, text: str) -> list[WireItem]:
        """A piece of the visible answer, at once."""
        if not text:
            return []
        self._opening([])
        return [self._line({"content": text})]

    def reasoning(self, text: str) -> list[WireItem]:
        """A piece of thinking, at once."""
        if not text:
            return []
        self._opening([])
        return [self._line({"thinking": text})]

    def call(self, event: ToolCallReady | ToolCallRepaired) -> list[WireItem]:
        """One accepted call, whole, in its own line."""
        self._opening([])
        call = event.call
        function = {
            "index": self._calls_sent,
            "name": call.name,
            "arguments": call_arguments_object(event),
        }
        written: dict[str, Any] = {"function": function}
        if not call.id_synthesized:
            written = {"id": self._ids.claim(call.call_id), **written}
        self._calls_sent += 1
        return [self._line({"tool_calls": [written]})]

    def usage(self, event: Usage) -> None:
        """Take a usage report (Ollama sends one, on the last line)."""
        self._usage = event

    def finish(self, reason: str) -> list[WireItem]:
        """The ``done`` line: ``done_reason`` (none when ``reason`` is empty) and the counters."""
        self._opening([])
        self._finished = True
        fields: dict[str, Any] = {"done": True}
        if reason:
            fields["done_reason"] = reason
        fields.update(_counts(self._usage))
        return [self._line({}, **fields)]

    def end(self) -> list[WireItem]:
        """Nothing: the ``done`` line is the end."""
        return []

    def error(self, error: dict[str, Any]) -> list[WireItem]:
        """The error line ``error`` (an object with ``error``), last."""
        self._failed = True
        return [error]

    def client_finish_reason(self, finish: Finish, *, calls_sent: bool) -> str:
        """``length`` for a cut at the token limit, else the server's (none when it sent none)."""
        if finish.cut_by == "token_limit":
            return self.LENGTH
        return finish.raw or ""

    def upstream_error(self, error: ProviderError) -> dict[str, Any]:
        """The server's error line when it is whole JSON, else ``{"error": message}``."""
        payload = error_payload(error)
        if isinstance(payload.get("error"), str):
            return payload
        return {"error": error.message}

    def heal_failed(
        self, message: str, code: str, *, status: int = 502, upstream: bool = False
    ) -> dict[str, Any]:
        """The error line of an exchange toolwire ends: Ollama's string, toolwire's type and
        code beside it, and the usage spent as the ``done`` line counts it (the SDK reads
        ``error`` only)."""
        line: dict[str, Any] = {"error": message, "type": failure_type(upstream), "code": code}
        line.update(_counts(self._usage))
        return line

    def feed(self, event: Event) -> list[WireItem]:
        """What ``event`` of a judged stream puts on the wire, with no healing
        (:func:`~toolwire.adapters.encoding.re_encode`)."""
        return re_encode(self, event)


def _counts(usage: Usage | None) -> dict[str, int]:
    """``prompt_eval_count`` / ``eval_count``: usage as Ollama's last line counts it."""
    counts: dict[str, int] = {}
    if usage is not None and usage.input_tokens is not None:
        counts["prompt_eval_count"] = usage.input_tokens
    if usage is not None and usage.output_tokens is not None:
        counts["eval_count"] = usage.output_tokens
    return counts


if TYPE_CHECKING:
    _encoder: HealEncoder = OllamaLineEncoder()
