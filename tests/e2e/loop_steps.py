"""The tool side of every agent-loop test over loopback HTTP, and one turn of such a loop.

A test scripts its provider's server (``loopback.py``), runs turns through an SDK or httpx
(its ``Chat``), and asserts what reached the tool (:class:`ToolSpy`) and what the next request
carried. :func:`step` is one turn for the providers whose history is a list of messages that
grows in place.
"""

from __future__ import annotations

from typing import Any, Protocol

from toolwire.core.turn import CallRecord, Turn
from toolwire.loop import ToolResult, check_history, dispatch, next_messages

#: A ``write`` and a ``read`` tool in the Chat Completions shape (Ollama reads the same shape).
WRITE_AND_READ_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "write",
            "description": "Write a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    },
]


class Chat(Protocol):
    """One turn through a client: the history in, the collected turn out."""

    async def turn(self, messages: list[dict[str, Any]]) -> Turn: ...


class ToolSpy:
    """Records every call that reached the tool; the loop's only way to run anything.

    ``ran`` holds ``(name, id, arguments)`` per call, or ``(name, arguments)`` with
    ``ids=False`` (where a client drops the provider's ids, or the provider sends none). A
    ``read`` returns a file's content; any other tool returns ``answer``.
    """

    def __init__(self, *, ids: bool = True, answer: str = "written") -> None:
        self.ids = ids
        self.answer = answer
        self.ran: list[tuple[Any, ...]] = []

    async def __call__(self, call: CallRecord) -> Any:
        if self.ids:
            self.ran.append((call.name, call.id, call.arguments))
        else:
            self.ran.append((call.name, call.arguments))
        return {"content": "file text"} if call.name == "read" else self.answer


async def step(
    chat: Chat, messages: list[dict[str, Any]], tool: ToolSpy, provider: str
) -> tuple[Turn, list[ToolResult]]:
    """One turn of the loop: collect, dispatch, append the assistant turn and every result."""
    turn = await chat.turn(messages)
    results = [result async for result in dispatch(turn, tool)]
    messages.extend(next_messages(turn, results, provider))
    assert check_history(messages, provider) == []
    return turn, results
