"""Self-healing: a client never receives a tool call toolwire rejected.

Put between a client and the model server, healing judges every tool call of every response
and sends the client only calls that passed, asking the model again, with toolwire's true
message, for each call it rejected. Nothing in the client changes but its HTTP transport (or,
with ``toolwire serve``, its base URL). Three wire formats: OpenAI Chat Completions, Anthropic
Messages, OpenAI Responses.

The parts, sans-I/O first, the shell last:

- :mod:`~toolwire.heal.wire_format`: the seam between the session and a format.
- :mod:`~toolwire.heal.encoder`: judged events back into Chat Completions chunks (the Chat
  adapter's mapper, run backwards); :mod:`~toolwire.heal.anthropic_encoder` and
  :mod:`~toolwire.heal.responses_encoder` do the same for the other two formats, and
  ``*_format`` modules hold each format's requests and whole bodies.
- :mod:`~toolwire.heal.request`: which requests are healed, what goes upstream, the retry's body.
- :mod:`~toolwire.heal.session`: one healed exchange: what the client gets, when to ask again.
- :mod:`~toolwire.heal.completion`: non-streamed bodies, healed the same way.
- :mod:`~toolwire.heal.telemetry`: a span per healed call and per retry, counters.
- :mod:`~toolwire.heal.transport`: :class:`HealingTransport`, the httpx shell (it needs
  ``httpx``, the ``[http]`` extra; it is imported on first use, so the rest never needs it);
  :class:`Httpx2Bridge` carries it to ``httpx2`` clients. ``toolwire serve``
  (:mod:`toolwire.serve`) is the proxy shell around it.

``docs/healing.md`` is the guide.
"""

from typing import TYPE_CHECKING

from .encoder import ChatChunkEncoder as ChatChunkEncoder
from .encoder import encode_events as encode_events
from .encoder import sse_frame as sse_frame
from .request import HealPlan as HealPlan
from .request import follow_up_body as follow_up_body
from .request import plan_request as plan_request
from .session import AttemptEnd as AttemptEnd
from .session import HealObserver as HealObserver
from .session import HealOutcome as HealOutcome
from .session import HealSession as HealSession
from .session import Retry as Retry
from .telemetry import HealTelemetry as HealTelemetry

if TYPE_CHECKING:
    from .httpx2_bridge import Httpx2Bridge as Httpx2Bridge
    from .transport import HealingTransport as HealingTransport

__all__ = [
    "AttemptEnd",
    "ChatChunkEncoder",
    "HealObserver",
    "HealOutcome",
    "HealPlan",
    "HealSession",
    "HealTelemetry",
    "HealingTransport",
    "Httpx2Bridge",
    "Retry",
    "encode_events",
    "follow_up_body",
    "plan_request",
    "sse_frame",
]


def __getattr__(name: str) -> object:
    # httpx is optional: the transport module is imported only when it is asked for.
    if name == "HealingTransport":
        from .transport import HealingTransport

        return HealingTransport
    if name == "Httpx2Bridge":
        from .httpx2_bridge import Httpx2Bridge

        return Httpx2Bridge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
