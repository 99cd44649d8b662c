"""Telemetry, whole in one place: spans, metrics, content capture, the observer and its stage.

``collect``/``stream`` feed every run to an observer (:mod:`.observer`) through
:mod:`.observing`; :class:`TelemetryStage` is the same observer as a stage for pipelines built by
hand. The attribute table is in ``docs/observability.md``.
"""

from .observer import Redactor as Redactor
from .observer import Telemetry as Telemetry
from .observer import observe_turn as observe_turn
from .stage import TelemetryStage as TelemetryStage

__all__ = ["Redactor", "Telemetry", "TelemetryStage", "observe_turn"]
