"""The constrained re-ask, for an agent loop: ask again for the call the model chose, valid.

After a turn whose call was rejected, an agent loop answers it (:func:`~toolwire.dispatch`
answers a rejected call with toolwire's true message), appends the history
(``next_messages``) and asks again. That second try is free: a small model often breaks the
call the same way again, or gives up. :func:`constrained_request` writes the next request so
that the server's own structured-output engine makes the call valid by construction, in that
server's own way (the provider's healing format says how: ``docs/healing.md``, "A constrained
re-ask"), exactly as the healing transport and ``toolwire serve`` ask:

.. code-block:: python

    request = {**request, "messages": messages + pipeline.next_messages(turn, results)}
    reask = pipeline.constrained_request(request, turn)
    response = send(reask.body)                  # the request, constrained when it could be
    turn = await pipeline.collect(response, request=reask)
    turn.constrained_to                          # the tool, when the re-ask was constrained

Only the re-ask is constrained: the loop's next request is built on ``request``, not on
``reask.body``, or every later turn would be forced to that tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from ..adapters.constraints import ConstraintOptions, constrained_reask, skipped
from ..adapters.registry import reask_format
from ..core.turn import Turn
from ..core.wire import Constraint

__all__ = ["constrained_request"]


def constrained_request(
    request: Mapping[str, Any],
    turn: Turn,
    provider: str = "openai-chat",
    *,
    unconstrained_tools: Iterable[str] = (),
) -> Constraint:
    """``request`` (the re-ask after ``turn``: its history already holds ``turn`` and one
    result per call) constrained to the tool of ``turn``'s rejected call, in the way
    ``provider``'s server forces one tool; the tools in ``unconstrained_tools`` never are.

    The answer's ``body`` is what to send: the constrained request, or ``request`` unchanged
    when the re-ask is not constrained (``skipped`` says why: no call was rejected, a cut, a
    schema the server's engine does not keep to whole...). Nothing else of ``request`` changes:
    the message the model reads is the one ``next_messages`` wrote.
    """
    wire = reask_format(provider)

    def constrain(body: Mapping[str, Any], tool: str) -> Constraint:
        if wire is None:
            return skipped(tool, "no_mechanism")
        return wire.constrained(body, tool)

    options = ConstraintOptions(off_tools=frozenset(unconstrained_tools))
    found = constrained_reask(request, turn, constrain, options)
    if found is None:
        found = skipped(None, "nothing_rejected")
    if found.applied:
        return found
    return msgspec.structs.replace(found, body=dict(request))
