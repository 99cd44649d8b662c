"""OpenAI Chat Completions as a healing wire format: the first one, and every local server's.

:data:`CHAT` binds the Chat write side (the chunk encoder, the request plan, the
``chat.completion`` bodies) behind :class:`~toolwire.core.wire.WireFormat`; every Chat provider
name is registered with its own :class:`ChatWireFormat`.

- :func:`plan_request` decides whether a client's request is healed at all and what goes
  upstream. First the body is adapted to the server's profile
  (:mod:`toolwire.adapters.openai_chat.adapt`: for llama-cpp-python, ``content: null`` becomes
  ``""``, ``role: tool`` results become user messages, and a streamed ``tool_choice: "auto"``
  request is asked whole and streamed back by the healing). Before that, every earlier call
  whose arguments the server would refuse (not JSON, not an object, markup) is written as a
  rejected call (:meth:`~toolwire.adapters.openai_chat.history.OpenAIChatHistory.repair`,
  by :func:`~toolwire.adapters.repaired_requests.repaired_history`, as every healed format
  does; ``HealPlan.repaired``): llama-server, vLLM and Ollama's ``/v1`` refuse the whole request
  otherwise, and every later one too. A request that needed adapting or repairing but is not
  healed goes up so, its response untouched. A request is healed when it is a
  JSON object with a ``messages`` list, offers ``tools``, and asks for one choice. Anything
  else (no tools, the legacy ``functions``, ``n`` above 1, a body that is not JSON) is not
  healed: there is no call to judge, or a response toolwire would not write back faithfully.
  A streamed request gets ``stream_options.include_usage`` (usage is evidence of the token
  limit, and what a retry costs); nothing else of the body changes, and a body that already
  asks for usage, with nothing to adapt, goes up byte for byte.
- The follow-up that asks again is the kit's
  :func:`~toolwire.adapters.encoding.follow_up_body`: the previous request's body (same model,
  tools, ``tool_choice``, everything), plus the assistant turn replayed safely and one result
  per call, written by the provider's history format (a rejected call replayed with ``{}`` and
  answered with toolwire's message; for llama-cpp-python, results as ``user`` messages, the
  form its prompt really shows the model).
- A retry after a cut at the token limit raises ``max_completion_tokens`` / ``max_tokens``
  (:data:`~toolwire.adapters.openai_chat.request.LIMIT_KEYS`): doubled, never above the
  configured ceiling, only a limit the request set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ...core.turn import Turn
from ...core.wire import Constraint, HealPlan, HealSettings, NextMessages, WireItem
from .. import encoding
from ..encoding import json_object, sse_frame
from ..repaired_requests import repaired_history, unhealed_plan
from . import completion
from .adapt import adapt_body
from .constrain import constrained_chat
from .encoder import ChatChunkEncoder
from .history import OpenAIChatHistory, broken_calls
from .profiles import CHAT_PROFILES, ServerProfile
from .request import LIMIT_KEYS

__all__ = ["CHAT", "ChatWireFormat", "open_chat_format", "plan_request"]

_encode = msgspec.json.Encoder().encode
#: The profile of a server that takes what OpenAI documents: nothing to adapt.
OPENAI = CHAT_PROFILES["openai-chat"]


def plan_request(content: bytes, profile: ServerProfile = OPENAI) -> HealPlan | None:
    """The plan for a client's request body, or ``None`` to pass it upstream untouched.

    The body is first adapted to ``profile``'s server (:func:`~.adapt.adapt_body`); a request
    that is not healed but was adapted gets a plan with ``heal=False``.
    """
    client = json_object(content)
    if client is None or not isinstance(client.get("messages"), list):
        return None
    client, repaired = repaired_history(
        client, "messages", OpenAIChatHistory.for_profile(profile), broken_calls
    )
    tools = client.get("tools")
    healed = isinstance(tools, list) and bool(tools) and client.get("n") in (None, 1)
    # Only a healed request can be asked whole and streamed back: the healing re-encodes.
    adapted, counts = adapt_body(client, profile, stream=healed)
    body = dict(adapted) if counts else client
    if not healed:
        return unhealed_plan(body, repaired, counts)
    options = client.get("stream_options")
    asked_usage = isinstance(options, dict) and options.get("include_usage") is True
    if "stream" in counts:
        return HealPlan(
            body=body,
            content=_encode(body),
            streaming=True,
            client_wants_usage=asked_usage,
            adapted=dict(counts),
            whole_upstream=True,
            repaired=repaired,
        )
    streaming = body.get("stream") is True
    if not streaming or asked_usage:
        return HealPlan(
            body=body,
            content=_encode(body) if counts or repaired else None,
            streaming=streaming,
            client_wants_usage=True,
            adapted=dict(counts),
            repaired=repaired,
        )
    upstream = dict(body)
    upstream["stream_options"] = {
        **(options if isinstance(options, dict) else {}),
        "include_usage": True,
    }
    unchanged = not counts and not repaired and "stream_options" not in body
    return HealPlan(
        body=upstream,
        content=_usage_asked(content) if unchanged else _encode(upstream),
        streaming=True,
        client_wants_usage=False,
        adapted=dict(counts),
        repaired=repaired,
    )


def _usage_asked(content: bytes) -> bytes:
    """``content``, a JSON object with members and no ``stream_options``, with
    ``"stream_options":{"include_usage":true}`` as its first member.

    The commonest healed request (a stream whose client did not ask for usage) needs only this
    one member more: the client's bytes go up otherwise as they came, and a body of tens of
    kilobytes is not encoded again (26 µs for 68 KB, against 3 µs to splice).
    """
    opening = len(content) - len(content.lstrip(b" \t\r\n"))
    return content[: opening + 1] + _USAGE_MEMBER + content[opening + 1 :]


_USAGE_MEMBER = b'"stream_options":{"include_usage":true},'


class ChatWireFormat:
    """Chat Completions requests and bodies, for healing (see the module docstring).

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
        """See :func:`plan_request` (with this provider's server profile)."""
        return plan_request(content, CHAT_PROFILES[self.provider])

    def encoder(self, plan: HealPlan) -> ChatChunkEncoder:
        """A chunk encoder that sends usage only when the client asked for it."""
        return ChatChunkEncoder(usage=plan.client_wants_usage, reasoning_field=self.reasoning_field)

    def frame(self, items: Iterable[WireItem]) -> bytes:
        """``data:`` lines (:func:`~toolwire.adapters.encoding.sse_frame`)."""
        return sse_frame(items)

    def follow_up_body(
        self, body: Mapping[str, Any], turn: Turn, next_messages: NextMessages
    ) -> dict[str, Any]:
        """See :func:`toolwire.adapters.encoding.follow_up_body`."""
        return encoding.follow_up_body(body, turn, next_messages)

    def raised_limit(
        self, body: Mapping[str, Any], ceiling: int
    ) -> tuple[dict[str, Any], int | None]:
        """``max_completion_tokens`` / ``max_tokens`` doubled, up to ``ceiling``."""
        return encoding.raised_limit(body, ceiling, LIMIT_KEYS)

    def read_body(self, content: bytes) -> dict[str, Any] | None:
        """See :func:`toolwire.adapters.openai_chat.completion.read_completion`."""
        return completion.read_completion(content)

    def body_as_stream(self, body: Mapping[str, Any]) -> bytes:
        """See :func:`toolwire.adapters.openai_chat.completion.completion_as_stream`."""
        return completion.completion_as_stream(body)

    def healed_body(self, first: Mapping[str, Any], items: Iterable[WireItem]) -> dict[str, Any]:
        """See :func:`toolwire.adapters.openai_chat.completion.completion_body`."""
        return completion.completion_body(first, items, reasoning_field=self.reasoning_field)

    def empty_body(self, items: Sequence[WireItem]) -> dict[str, Any]:
        """See :func:`toolwire.adapters.openai_chat.completion.empty_completion`."""
        return completion.empty_completion(items)

    def error_body(self, items: Iterable[WireItem]) -> dict[str, Any] | None:
        """See :func:`toolwire.adapters.openai_chat.completion.error_status`."""
        return completion.error_status(items)

    def constrained(self, body: Mapping[str, Any], tool: str) -> Constraint:
        """See :func:`toolwire.adapters.openai_chat.constrain.constrained_chat` (this
        provider's server profile says how its server forces one tool)."""
        return constrained_chat(body, tool, CHAT_PROFILES[self.provider].forcing)


#: Chat Completions with reasoning under ``reasoning_content``.
CHAT = ChatWireFormat()


def open_chat_format(provider: str) -> Callable[[HealSettings], ChatWireFormat]:
    """The healing format of Chat provider ``provider`` (its server profile reads and writes)."""

    def open_format(settings: HealSettings) -> ChatWireFormat:
        return ChatWireFormat(provider, reasoning_field=settings.reasoning_field)

    return open_format
