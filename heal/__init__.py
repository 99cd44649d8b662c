"""Self-healing: a client never receives a tool call toolwire rejected.

Put between a client and the model server, healing judges every tool call of every response
and sends the client only calls that passed, asking the model again, with toolwire's true
message, for each call it rejected. Nothing in the client changes but its HTTP transport (or,
with ``toolwire serve``, its base URL). Three wire formats: OpenAI Chat Completions, Anthropic
Messages, OpenAI Responses.

This package names no format. Each format's write side lives with its read side, in its
provider's package (``adapters/<provider>/encoder.py``: judged events back into the format, the
mapper run backwards; ``healing.py``: which requests are healed, the follow-up, whole bodies),
behind the ports of :mod:`toolwire.core.wire`, and is found through the provider registry
(:func:`toolwire.adapters.registry.heal_formats`). Here, sans-I/O first, the shell last:

- :mod:`~toolwire.heal.session`: one healed exchange: what the client gets, when to ask again.
- :mod:`~toolwire.heal.telemetry`: a span per healed call and per retry, counters.
- :mod:`~toolwire.heal.transport`: :class:`HealingTransport`, the httpx shell (it needs
  ``httpx``, the ``[http]`` extra; it is imported on first use, so the rest never needs it);
  :class:`Httpx2Bridge` carries it to ``httpx2`` clients. ``toolwire serve``
  (:mod:`toolwire.serve`) is the proxy shell around it.

``docs/healing.md`` is the guide.
"""

from typing import TYPE_CHECKING

from .session import AttemptEnd as AttemptEnd
from .session import HealFigures as HealFigures
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
    "HealFigures",
    "HealObserver",
    "HealOutcome",
    "HealSession",
    "HealTelemetry",
    "HealingTransport",
    "Httpx2Bridge",
    "Retry",
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
