"""OpenAI Chat Completions as a healing wire format: the first one, and every local server's.

:data:`CHAT` binds the Chat parts of :mod:`toolwire.heal` (the chunk encoder, the request plan,
the ``chat.completion`` bodies) behind :class:`~toolwire.heal.wire_format.WireFormat`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..core.turn import Turn
from . import completion, request
from .encoder import ChatChunkEncoder, WireItem, sse_frame
from .request import HealPlan, NextMessages

__all__ = ["CHAT", "ChatWireFormat"]


class ChatWireFormat:
    """Chat Completions requests and bodies, for healing (see :mod:`toolwire.heal.request`).

    ``provider`` is the Chat provider name whose server profile reads the responses and
    writes the follow-ups (``llama-cpp`` for llama-cpp-python); ``reasoning_field`` is the
    delta key reasoning goes out under (``reasoning_content``, or ``reasoning`` for
    OpenRouter's clients).
    """

    path = "/chat/completions"

    def __init__(
        self, provider: str = "openai-chat", *, reasoning_field: str = "reasoning_content"
    ) -> None:
        self.provider = provider
        self.reasoning_field = reasoning_field

    def plan_request(self, content: bytes) -> HealPlan | None:
        """See :func:`toolwire.heal.request.plan_request`."""
        return request.plan_request(content)

    def encoder(self, plan: HealPlan) -> ChatChunkEncoder:
        """A chunk encoder that sends usage only when the client asked for it."""
        return ChatChunkEncoder(usage=plan.client_wants_usage, reasoning_field=self.reasoning_field)

    def frame(self, items: Iterable[WireItem]) -> bytes:
        """``data:`` lines (:func:`~toolwire.heal.encoder.sse_frame`)."""
        return sse_frame(items)

    def follow_up_body(
        self, body: Mapping[str, Any], turn: Turn, next_messages: NextMessages
    ) -> dict[str, Any]:
        """See :func:`toolwire.heal.request.follow_up_body`."""
        return request.follow_up_body(body, turn, next_messages)

    def raised_limit(
        self, body: Mapping[str, Any], ceiling: int
    ) -> tuple[dict[str, Any], int | None]:
        """``max_completion_tokens`` / ``max_tokens`` (:func:`~.request.raised_limit`)."""
        return request.raised_limit(body, ceiling)

    def read_body(self, content: bytes) -> dict[str, Any] | None:
        """See :func:`toolwire.heal.completion.read_completion`."""
        return completion.read_completion(content)

    def body_as_stream(self, body: Mapping[str, Any]) -> bytes:
        """See :func:`toolwire.heal.completion.completion_as_stream`."""
        return completion.completion_as_stream(body)

    def healed_body(self, first: Mapping[str, Any], items: Iterable[WireItem]) -> dict[str, Any]:
        """See :func:`toolwire.heal.completion.completion_body`."""
        return completion.completion_body(first, items, reasoning_field=self.reasoning_field)

    def error_body(self, items: Iterable[WireItem]) -> dict[str, Any] | None:
        """See :func:`toolwire.heal.completion.error_status`."""
        return completion.error_status(items)


#: Chat Completions with reasoning under ``reasoning_content``.
CHAT = ChatWireFormat()
