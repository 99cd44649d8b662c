"""A constrained re-ask on the Messages API: ``tool_choice: {"type": "tool", "name": T}``.

Per kind of upstream (:data:`FORCING`, :func:`~toolwire.adapters.constraints.forcing_for`):

- the API itself: ``{"type": "tool", "name": T}`` forces a call to ``T`` (Anthropic's "Tool use"
  guide, "Forcing tool use"); the arguments are the model's (the API's strict tool use is a
  beta behind a header, not asked for), and the judge checks them as ever. With thinking on,
  the API refuses a forced tool ("Tool use with thinking only supports ``auto`` or ``none``",
  the extended-thinking guide), so such a re-ask is not constrained (``thinking``);
- a local server: no way known. llama-server converts ``/v1/messages`` to a Chat request and
  keeps no structured-output field (b11434 ``server_chat_convert_anthropic_to_oai`` passes on
  ``temperature``, ``top_p``, ``top_k``, ``stream`` and ``chat_template_kwargs`` only), and it
  reads ``{"type": "tool"}`` as ``tool_choice: "required"``, which lets the model write text
  before the call and never end it (:mod:`toolwire.adapters.openai_chat.constrain`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ...core.wire import Constraint
from ..constraints import HOSTED, Forcing, find_tool, forcing_for, skipped

__all__ = ["FORCING", "constrained_messages"]

#: The kinds of upstream that force one tool on ``/v1/messages``, and how.
FORCING: Final[Mapping[str, Forcing]] = {HOSTED: Forcing(mechanism="tool_choice=tool")}
#: ``thinking.type`` values that turn thinking on.
_THINKING_ON: Final = frozenset({"enabled", "adaptive", "between_tools"})


def constrained_messages(
    body: Mapping[str, Any], tool: str, *, upstream: str, local: bool
) -> Constraint:
    """``body`` asking for a call to ``tool`` (see the module docstring), or why it cannot."""
    if forcing_for(FORCING, upstream, local) is None:
        return skipped(tool, "no_mechanism")
    if find_tool(body.get("tools"), tool, lambda item: item.get("name")) is None:
        return skipped(tool, "tool_not_offered")
    thinking = body.get("thinking")
    if isinstance(thinking, Mapping) and thinking.get("type") in _THINKING_ON:
        return skipped(tool, "thinking")
    choice: dict[str, Any] = {"type": "tool", "name": tool}
    previous = body.get("tool_choice")
    if isinstance(previous, Mapping) and "disable_parallel_tool_use" in previous:
        choice["disable_parallel_tool_use"] = previous["disable_parallel_tool_use"]
    return Constraint(tool=tool, body={**body, "tool_choice": choice}, mechanism="tool_choice=tool")
