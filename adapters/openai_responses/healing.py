"""OpenAI Responses as a healing wire format: ``POST /v1/responses`` requests and bodies.

:data:`RESPONSES` binds the
:class:`~toolwire.adapters.openai_responses.encoder.ResponsesEventEncoder` (whose docstring
says what a client receives, and why item ids and reasoning go out as they do) with the
requests and whole ``response`` bodies.

Not healed (the request passes untouched): a request that continues a stored response
(``previous_response_id``), a ``conversation`` or a ``background`` response: their state lives
on the server, where the first response (the rejected call with it) would stay the context of
the client's next request, which the API would refuse (no output for the rejected call); and
a request that offers any tool but ``function`` tools, whose items (``web_search_call``,
``custom_tool_call``, ``computer_call``, MCP...) and annotations reach toolwire only in
``ProviderContent``. With ``store`` (the API's default) the server keeps every response of the
exchange, the first one's rejected call too: a client that fetches it by id sees it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ...core.turn import Turn
from ...core.wire import Constraint, HealPlan, HealSettings, NextMessages, WireItem
from ..encoding import json_object, named_sse_frame, raised_limit, turn_results, with_first_parts
from ..repaired_requests import planned
from .constrain import constrained_responses
from .encoder import TERMINALS, WRITTEN, ReasoningPart, ResponsesEventEncoder
from .history import OpenAIResponsesHistory, broken_calls
from .request import LIMIT_KEYS

if TYPE_CHECKING:
    from ...core.wire import WireFormat

__all__ = ["RESPONSES", "ResponsesWireFormat", "open_responses_format"]

_decode = msgspec.json.decode
_HISTORY = OpenAIResponsesHistory()


class ResponsesWireFormat:
    """``POST /v1/responses`` requests and ``response`` bodies, for healing. Stateless.

    ``reasoning`` is the part reasoning goes out as (``None``: not sent; see the module
    docstring). ``upstream`` and ``local`` say what serves the endpoint (``HealSettings``): the
    API, or a local server, which a constrained re-ask is asked of in its own way
    (:mod:`.constrain`).
    """

    provider = "openai-responses"
    path = "/responses"

    def __init__(
        self,
        *,
        reasoning: ReasoningPart | None = None,
        upstream: str = "openai-responses",
        local: bool = False,
    ) -> None:
        self.reasoning = reasoning
        self.upstream = upstream
        self.local = local

    def plan_request(self, content: bytes) -> HealPlan | None:
        """Heal a body whose ``input`` is a list or a string and whose tools are all functions.

        It goes upstream as is (Responses streams always carry usage), but for earlier
        ``function_call`` items whose ``arguments`` are not a JSON object, written as rejected
        calls (:func:`~toolwire.adapters.repaired_requests.repaired_history`): vLLM and
        llama-server read every replayed call's arguments as Chat arguments, and refuse the
        request. A request whose state lives on the server, or that offers other tools, is not
        healed (see the module docstring); its ``input`` is repaired all the same.
        """
        body = json_object(content)
        if body is None or not isinstance(body.get("input"), str | list):
            return None
        streaming = body.get("stream") is True
        return planned(body, "input", _HISTORY, broken_calls, heals=_heals, streaming=streaming)

    def encoder(self, plan: HealPlan) -> ResponsesEventEncoder:
        """A new encoder that echoes ``plan.body``'s parameters."""
        return ResponsesEventEncoder(plan.body, reasoning=self.reasoning)

    def frame(self, items: Iterable[WireItem]) -> bytes:
        """``event:`` + ``data:`` per event (the kit's ``named_sse_frame``)."""
        return named_sse_frame(items)

    def follow_up_body(
        self, body: Mapping[str, Any], turn: Turn, next_messages: NextMessages
    ) -> dict[str, Any]:
        """``body`` asked again: its ``input``, then ``turn`` and one result per call.

        The same rule as :func:`toolwire.adapters.encoding.follow_up_body`, under ``input`` (a
        string input becomes one user message). With ``store: false`` nothing of the first
        response was kept, so its messages and calls go back without their ids (the API looks
        ids up, and refuses unknown ones), and a reasoning item only with its
        ``encrypted_content``, and with its id, which the input schema requires and by which
        the encrypted content is verified.
        """
        items = next_messages(turn, turn_results(turn))
        if body.get("store") is False:
            items = [_unstored(item) for item in items if _replayable_unstored(item)]
        given = body["input"]
        previous = [{"role": "user", "content": given}] if isinstance(given, str) else given
        return {**body, "input": [*previous, *items]}

    def raised_limit(
        self, body: Mapping[str, Any], ceiling: int
    ) -> tuple[dict[str, Any], int | None]:
        """``max_output_tokens`` doubled, up to ``ceiling`` (``None``: unset, or at the ceiling)."""
        return raised_limit(body, ceiling, LIMIT_KEYS)

    def read_body(self, content: bytes) -> dict[str, Any] | None:
        """``content`` decoded, when it is a finished ``response`` whose items can be read.

        Only ``completed`` and ``incomplete`` responses: a failed (or still queued) one has
        nothing to heal and goes to the client as the server wrote it.
        """
        body = json_object(content)
        if body is None or body.get("object", "response") != "response":
            return None
        if body.get("status") not in ("completed", "incomplete"):
            return None
        output = body.get("output")
        if not isinstance(output, list) or not all(
            isinstance(item, dict) and isinstance(item.get("type"), str) for item in output
        ):
            return None
        return body

    def body_as_stream(self, body: Mapping[str, Any]) -> bytes:
        """The Responses stream a ``response`` body is equivalent to: each item finished whole.

        ``response.created``, one ``response.output_item.done`` per item (the Responses mapper
        reads a part it never saw streamed from its whole text), then the terminal event with
        the body itself.
        """
        lifecycle = {key: body.get(key) for key in ("id", "object", "created_at", "model")}
        lifecycle.update(status="in_progress", output=[], usage=None)
        events: list[dict[str, Any]] = [{"type": "response.created", "response": lifecycle}]
        events += [
            {"type": "response.output_item.done", "output_index": index, "item": item}
            for index, item in enumerate(body["output"])
        ]
        completed = body.get("status") == "completed"
        terminal = "response.completed" if completed else "response.incomplete"
        events.append({"type": terminal, "response": dict(body)})
        numbered: list[WireItem] = [
            {"type": event["type"], "sequence_number": number, **event}
            for number, event in enumerate(events)
        ]
        return named_sse_frame(numbered)

    def healed_body(self, first: Mapping[str, Any], items: Iterable[WireItem]) -> dict[str, Any]:
        """The client's ``response``: ``first`` with the output, status and usage sent.

        An item the first body holds as sent keeps its form there (a message's id, ``phase``
        and annotations; a call's item id), and the first body's opaque items (reasoning, with
        its ``encrypted_content``) stay before the items they preceded. Every other field of
        ``first`` is kept (``output_text``, where a server adds it, is written again).
        """
        terminal: Mapping[str, Any] = {}
        for item in items:
            if isinstance(item, dict) and item.get("type") in TERMINALS:
                terminal = item["response"]
        body = dict(first)
        if not terminal:
            return body
        body["output"] = with_first_parts(
            list(first.get("output") or ()),
            terminal["output"],
            reproduces=_reproduces,
            written=WRITTEN,
            call_type="function_call",
        )
        body["status"] = terminal["status"]
        body["incomplete_details"] = terminal["incomplete_details"]
        usage = terminal.get("usage")
        if usage is not None:
            kept = first.get("usage")
            body["usage"] = {**(kept if isinstance(kept, dict) else {}), **usage}
        if "output_text" in body:
            body["output_text"] = "".join(
                _item_text(item) for item in body["output"] if item.get("type") == "message"
            )
        return body

    def empty_body(self, items: Sequence[WireItem]) -> dict[str, Any]:
        """The ``response`` of the items' ``response.created`` (no output yet), as a body."""
        for item in items:
            if isinstance(item, dict) and item.get("type") == "response.created":
                return dict(item["response"])
        return {"object": "response", "status": "in_progress", "output": []}

    def error_body(self, items: Iterable[WireItem]) -> dict[str, Any] | None:
        """``{"error": {...}}``, the body of an API error, when the items end in one."""
        for item in items:
            if isinstance(item, dict) and item.get("type") == "error":
                return {"error": item["error"]}
        return None

    def constrained(self, body: Mapping[str, Any], tool: str) -> Constraint:
        """See :func:`~toolwire.adapters.openai_responses.constrain.constrained_responses`."""
        return constrained_responses(body, tool, upstream=self.upstream, local=self.local)


def _heals(body: Mapping[str, Any]) -> bool:
    """Only ``function`` tools, and no state kept on the server (see the module docstring)."""
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools or not all(map(_function_tool, tools)):
        return False
    if body.get("previous_response_id") is not None or body.get("conversation") is not None:
        return False
    return body.get("background") is not True


def _function_tool(tool: object) -> bool:
    return isinstance(tool, dict) and tool.get("type") == "function"


def _replayable_unstored(item: Mapping[str, Any]) -> bool:
    return item.get("type") != "reasoning" or bool(item.get("encrypted_content"))


def _unstored(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item replayed to a server that stored nothing: a message or call without its id.

    A reasoning item keeps its id: it travels with its ``encrypted_content``, which the API
    verifies by it (its input schema requires the id).
    """
    if item.get("type") in ("message", "function_call"):
        return {key: value for key, value in item.items() if key != "id"}
    return dict(item)


def _item_text(item: Mapping[str, Any]) -> str:
    """The text of a message (its output text and refusals) or reasoning item (all parts)."""
    texts: list[str] = []
    for field in ("content", "summary"):
        for part in item.get(field) or ():
            if isinstance(part, Mapping):
                value = part.get("refusal") if part.get("type") == "refusal" else part.get("text")
                if isinstance(value, str):
                    texts.append(value)
    return "".join(texts)


def _reproduces(item: Mapping[str, Any], original: Mapping[str, Any]) -> bool:
    kind = item.get("type")
    if kind != original.get("type"):
        return False
    if kind == "function_call":
        return bool(
            item.get("call_id") == original.get("call_id")
            and item.get("name") == original.get("name")
        )
    return kind in ("message", "reasoning") and _item_text(item) == _item_text(original)


#: The Responses API, healed (reasoning not sent).
RESPONSES: Final = ResponsesWireFormat()


def open_responses_format(settings: HealSettings) -> ResponsesWireFormat:
    """The Responses API's healing format (reasoning not sent), for the upstream ``settings``
    names."""
    if not settings.upstream_local:
        return RESPONSES
    return ResponsesWireFormat(upstream=settings.upstream, local=True)


if TYPE_CHECKING:
    _wire: WireFormat = RESPONSES
