"""What the healing refuses before a request goes upstream (issue 19, parts 3 and 5), sans-I/O.

A healed request's tools are compiled (each schema checked against its metaschema, its
validator built) before the request is sent, so that a tool the judge cannot use is a typed
400 naming the tool and the place in its schema, not a failure after the upstream was paid.
That compile is the one the judge then uses (the pipeline's cache of recent tool lists), and
it runs in a worker thread. What bounds it, whatever the client sends (:class:`ToolLimits`):

- ``max_tools`` tools per request;
- ``max_tool_schema_bytes`` per tool (its definition as JSON): one schema is compiled in one
  native call that holds the GIL, so its size bounds how long the event loop can wait for
  that thread (64 KiB: about 12 ms measured; one of 1 MiB stalled the loop 143 ms);
- ``max_tools_bytes`` for the whole list: bounds the CPU one request can cost (compiling takes
  70 to 230 ns per byte, and pricing each schema for the judge, issue 29, about 90 to 200
  more: 1 MiB is 160 to 430 ms of a worker thread, once per distinct list).

Each check gives a :class:`Refusal`: the HTTP status, the error code and the message of the
OpenAI-shaped error the client receives, naming the limit that was passed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import msgspec

from ..core.errors import ConfigurationError

__all__ = ["Refusal", "ToolLimits", "compiled_or_refusal", "tools_refusal"]

_encode = msgspec.json.Encoder().encode
#: What compiling a tool list makes (the judge's stage).
T = TypeVar("T")


class Refusal(msgspec.Struct, frozen=True):
    """Why a request is answered here: HTTP ``status``, error ``code``, ``message``."""

    status: int
    code: str
    message: str


class ToolLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The tools one healed request may offer (see the module docstring for why each)."""

    max_tools: int = 512
    max_tool_schema_bytes: int = 64 * 1024
    max_tools_bytes: int = 1024 * 1024


def tools_refusal(
    tools: object, limits: ToolLimits, *, list_bytes: int | None = None
) -> Refusal | None:
    """The refusal of a tool list over ``limits``, or ``None`` (also when ``tools`` is none).

    ``list_bytes``: the size of the whole list as compact JSON, when the caller has it (the
    judge cache's key). Each tool, and all of them together, is smaller: a list within both
    size limits needs no tool encoded again (21 encodes of a 25 KB list cost about 27 µs per
    request, the same every turn of an agent).
    """
    if not isinstance(tools, list | tuple):
        return None
    if len(tools) > limits.max_tools:
        return Refusal(
            400,
            "too_many_tools",
            f"the request offers {len(tools)} tools; toolwire judges at most "
            f"{limits.max_tools} per request (max_tools)",
        )
    if list_bytes is not None and list_bytes <= min(
        limits.max_tool_schema_bytes, limits.max_tools_bytes
    ):
        return None
    total = 0
    for position, tool in enumerate(tools):
        try:
            size = len(_encode(tool))
        except (TypeError, msgspec.EncodeError, RecursionError):
            return None  # not plain JSON: the compile says what is wrong with it
        if size > limits.max_tool_schema_bytes:
            return Refusal(
                400,
                "tool_too_large",
                f"tool {_tool_name(tool, position)} is {size} bytes of JSON; toolwire judges "
                f"tools of at most {limits.max_tool_schema_bytes} bytes (max_tool_schema_bytes)",
            )
        total += size
        if total > limits.max_tools_bytes:
            return Refusal(
                400,
                "tools_too_large",
                f"the request's tools are over {limits.max_tools_bytes} bytes of JSON "
                "(max_tools_bytes)",
            )
    return None


def _tool_name(tool: object, position: int) -> str:
    if isinstance(tool, dict):
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str):
            return f"{name[:100]!r}"
    return f"#{position}"


def compiled_or_refusal(compile_tools: Callable[[object], T], tools: object) -> T | Refusal:
    """``tools`` compiled with ``compile_tools`` (the judge then uses what it made), or the
    refusal of a list the judge cannot use."""
    try:
        return compile_tools(tools)
    except ConfigurationError as error:
        return Refusal(400, "invalid_tools", f"toolwire cannot judge this request: {error}")
    except RecursionError:
        return Refusal(400, "invalid_tools", "the tools are nested too deeply to be used")
