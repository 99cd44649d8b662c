"""toolwire's metric instruments: the repair rate, truncated turns, argument sizes.

Every attribute value here comes from a bounded set: outcomes, repair kinds, rejection reasons,
truncation evidence and provider names are closed vocabularies; tool names and model names come
from the model or the server, so each :class:`Instruments` keeps the first
:data:`MAX_DISTINCT_VALUES` distinct values of each and reports any later one as ``_other``.
No ids and no raw text ever reach a metric attribute.

Instruments are created once per meter provider (a weak cache), because creating the same
instrument again on every turn would cost time and, on some SDKs, log a duplicate warning.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from opentelemetry import metrics

from ...core.events import TruncationEvidence
from ...core.verdict import Verdict

InstrumentsT = TypeVar("InstrumentsT")

__all__ = [
    "ARGUMENT_SIZE_BUCKETS",
    "MAX_DISTINCT_VALUES",
    "OTHER",
    "UNKNOWN_MODEL",
    "BoundedValues",
    "Instruments",
    "PerMeterProvider",
    "instruments_for",
]

#: How many distinct tool names (and, separately, model names) one meter provider reports before
#: folding the rest into :data:`OTHER`.
MAX_DISTINCT_VALUES = 100
#: The value reported for a tool or model name beyond the first :data:`MAX_DISTINCT_VALUES`.
OTHER = "_other"
#: The model reported for a call judged before the provider said which model answered.
UNKNOWN_MODEL = "unknown"
#: Histogram buckets for argument sizes, in characters (advisory; a View may override them).
ARGUMENT_SIZE_BUCKETS: Sequence[float] = (0, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576)
_NAME_CAP = 128


class BoundedValues:
    """The first ``limit`` distinct values seen pass (cut to 128 characters); any later one
    becomes :data:`OTHER`. Thread-safe: one per attribute per meter provider."""

    __slots__ = ("_limit", "_lock", "_seen")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        """``value`` as it is reported: itself, cut to 128 characters, or :data:`OTHER`."""
        value = value[:_NAME_CAP]
        if value in self._seen:
            return value
        with self._lock:
            if value in self._seen:
                return value
            if len(self._seen) >= self._limit:
                return OTHER
            self._seen.add(value)
            return value


class Instruments:
    """The counters and the histogram toolwire records to, for one meter provider."""

    __slots__ = ("_calls", "_families", "_models", "_repairs", "_sizes", "_tools", "_truncated")

    def __init__(self, meter: metrics.Meter, max_distinct: int = MAX_DISTINCT_VALUES) -> None:
        self._calls = meter.create_counter(
            "toolwire.tool_calls",
            unit="{call}",
            description="Tool calls by outcome (ok, repaired, rejected, unjudged), tool, "
            "provider and model; the repair rate is repaired / all.",
        )
        self._repairs = meter.create_counter(
            "toolwire.tool_call.repairs",
            unit="{repair}",
            description="Repairs applied to tool-call arguments, one per kind per call.",
        )
        self._truncated = meter.create_counter(
            "toolwire.truncated_turns",
            unit="{turn}",
            description="Turns whose output was cut off at the output-token limit.",
        )
        self._sizes = meter.create_histogram(
            "toolwire.tool_call.arguments.size",
            unit="{char}",
            description="Length of the raw arguments text of each tool call, in characters.",
            explicit_bucket_boundaries_advisory=ARGUMENT_SIZE_BUCKETS,
        )
        self._tools = BoundedValues(max_distinct)
        self._models = BoundedValues(max_distinct)
        self._families = BoundedValues(max_distinct)

    def record_call(
        self,
        *,
        outcome: str,
        verdict: Verdict | None,
        tool: str,
        provider: str,
        model: str | None,
        raw_length: int,
        origin: str = "structured",
        family: str | None = None,
    ) -> None:
        """Count one tool call (judged or not) and record its argument size.

        ``origin`` is ``text`` for a call read from the model's markup in the text (its
        ``family`` is then an attribute too: a few dozen values at most)."""
        attributes: dict[str, str] = {
            "toolwire.outcome": outcome,
            "gen_ai.tool.name": self._tools(tool),
            "gen_ai.provider.name": provider,
            "gen_ai.response.model": self._models(model) if model else UNKNOWN_MODEL,
            "toolwire.call.origin": origin,
        }
        if family is not None:
            attributes["toolwire.call.family"] = self._families(family)
        sizes = dict(attributes)
        if verdict is not None:
            if outcome == "repaired" and verdict.repairs:
                # The first repair applied is the call's primary kind; every kind is counted on
                # toolwire.tool_call.repairs, so a combination never multiplies cardinality.
                attributes["toolwire.repair.kind"] = verdict.repairs[0]
            elif outcome == "rejected":
                attributes["toolwire.reject.reason"] = verdict.reason or "unknown"
        self._calls.add(1, attributes)
        self._sizes.record(raw_length, sizes)
        if outcome == "repaired" and verdict is not None:
            for kind in dict.fromkeys(verdict.repairs):
                self._repairs.add(1, {**sizes, "toolwire.repair.kind": kind})

    def record_truncated_turn(
        self, *, provider: str, model: str | None, evidence: Sequence[TruncationEvidence]
    ) -> None:
        """Count one turn whose output was cut off."""
        self._truncated.add(
            1,
            {
                "gen_ai.provider.name": provider,
                "gen_ai.response.model": self._models(model) if model else UNKNOWN_MODEL,
                "toolwire.truncation.evidence": ",".join(sorted(set(evidence))),
            },
        )


class PerMeterProvider(Generic[InstrumentsT]):
    """Instruments built once per meter provider: the pipeline's, the healing's.

    Creating instruments is not free and a provider keeps them; the cache holds each provider
    weakly (a provider that cannot be weakly referenced or hashed is simply not cached).
    """

    __slots__ = ("_build", "_cache", "_lock")

    def __init__(self, build: Callable[[metrics.Meter], InstrumentsT]) -> None:
        self._build = build
        self._cache: weakref.WeakKeyDictionary[object, InstrumentsT] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, meter_provider: metrics.MeterProvider | None, version: str) -> InstrumentsT:
        """The instruments of ``meter_provider`` (the global one when ``None``)."""
        provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        try:
            cached = self._cache.get(provider)
        except TypeError:  # not weak-referenceable or not hashable: no caching
            cached = None
        if cached is not None:
            return cached
        with self._lock:
            try:
                cached = self._cache.get(provider)
            except TypeError:
                cached = None
            if cached is not None:
                return cached
            created = self._build(metrics.get_meter("toolwire", version, meter_provider=provider))
            try:
                self._cache[provider] = created
            except TypeError:
                pass
            return created


_PIPELINE_INSTRUMENTS = PerMeterProvider(Instruments)


def instruments_for(meter_provider: metrics.MeterProvider | None, version: str) -> Instruments:
    """The pipeline's instruments of ``meter_provider`` (the global one when ``None``)."""
    return _PIPELINE_INSTRUMENTS.get(meter_provider, version)
