"""The judge stages of recent tool lists, compiled once: a proxy sees the same tools every turn.

Compiling a request's tool schemas (checking each against its metaschema, building the
validator) costs about 0.7 ms for two small tools, more than judging and re-encoding a whole
streamed turn. An agent sends the same ``tools`` with every request, so a pipeline that reads
them from each request (``toolwire serve``, ``HealingTransport``, ``collect(request=...)``)
keeps the stages of the last few distinct lists, keyed by their canonical JSON. A
:class:`~toolwire.stages.judge.JudgeStage` is stateless per run, so one can serve every turn.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Literal

import msgspec

from ..judge import Policy
from .judge import JudgeStage

__all__ = ["JudgeStageCache"]

_canonical = msgspec.json.Encoder(order="sorted").encode


class JudgeStageCache:
    """The judge stages of the ``size`` most recently used tool lists (least recent goes)."""

    __slots__ = ("_lock", "_policy", "_size", "_stages", "_truncated_calls")

    def __init__(
        self,
        policy: Policy | None,
        truncated_calls: Literal["reject", "allow"],
        size: int = 64,
    ) -> None:
        self._policy = policy
        self._truncated_calls = truncated_calls
        self._size = size
        self._stages: OrderedDict[bytes, JudgeStage] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._stages)

    def stage_for(self, tools: Any) -> JudgeStage:
        """The stage that judges against ``tools`` (a JSON value, as a request carries it)."""
        try:
            key = _canonical(tools)
        except (TypeError, msgspec.EncodeError):
            return self._build(tools)  # not plain JSON: nothing to key it by
        with self._lock:
            stage = self._stages.get(key)
            if stage is not None:
                self._stages.move_to_end(key)
                return stage
        stage = self._build(tools)  # a bad schema raises here, and is never kept
        with self._lock:
            self._stages[key] = stage
            if len(self._stages) > self._size:
                self._stages.popitem(last=False)
        return stage

    def _build(self, tools: Any) -> JudgeStage:
        return JudgeStage(tools=tools, policy=self._policy, truncated_calls=self._truncated_calls)
