"""The judge stages of recent tool lists, compiled once: a proxy sees the same tools every turn.

Compiling a request's tool schemas (checking each against its metaschema, building the
validator) costs about 0.7 ms for two small tools, more than judging and re-encoding a whole
streamed turn. An agent sends the same ``tools`` with every request, so a pipeline that reads
them from each request (``toolwire serve``, ``HealingTransport``, ``collect(request=...)``)
keeps the stages of the last few distinct lists, keyed by a digest of their canonical JSON. A
:class:`~toolwire.stages.judge.JudgeStage` is stateless per run, so one can serve every turn.

The cache is bounded twice (issue 19, part 3): ``size`` lists, and ``max_bytes`` of their
canonical JSON together (a compiled schema's memory grows with its size), so that clients
sending large lists that differ by one character each time cannot make it grow; the key is a
32-byte digest, not the list's JSON.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any, Literal, NamedTuple

import msgspec

from ..judge import Policy
from .judge import JudgeStage
from .judge_process import DEFAULT_CHECK_BUDGET

__all__ = ["JudgeStageCache", "ToolListKey", "tool_list_key"]

_canonical = msgspec.json.Encoder(order="sorted").encode


class JudgeStageCache:
    """The judge stages of the most recently used tool lists (least recent goes first).

    At most ``size`` lists and ``max_bytes`` of their canonical JSON together; a list larger
    than ``max_bytes`` alone is compiled and not kept. Each stage is built with ``policy``,
    ``truncated_calls`` and ``check_budget`` (:class:`~toolwire.stages.judge.JudgeStage`).
    """

    __slots__ = (
        "_bytes",
        "_check_budget",
        "_lock",
        "_max_bytes",
        "_policy",
        "_size",
        "_stages",
        "_truncated_calls",
    )

    def __init__(
        self,
        policy: Policy | None,
        truncated_calls: Literal["reject", "allow"],
        size: int = 64,
        max_bytes: int = 16 * 1024 * 1024,
        *,
        check_budget: float | None = DEFAULT_CHECK_BUDGET,
    ) -> None:
        self._policy = policy
        self._truncated_calls = truncated_calls
        self._check_budget = check_budget
        self._size = size
        self._max_bytes = max_bytes
        self._bytes = 0
        self._stages: OrderedDict[bytes, tuple[JudgeStage, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._stages)

    @property
    def kept_bytes(self) -> int:
        """The canonical JSON size of the lists kept now (at most ``max_bytes``)."""
        return self._bytes

    def cached(self, tools: Any, key: ToolListKey | None = None) -> JudgeStage | None:
        """The stage of ``tools`` when it is kept, else ``None`` (nothing is compiled).

        ``key``: ``tools``' own :func:`tool_list_key`, when the caller already made it.
        """
        if key is None:
            key = tool_list_key(tools)
            if key is None:
                return None
        with self._lock:
            entry = self._stages.get(key.digest)
            if entry is None:
                return None
            self._stages.move_to_end(key.digest)
            return entry[0]

    def stage_for(self, tools: Any) -> JudgeStage:
        """The stage that judges against ``tools`` (a JSON value, as a request carries it)."""
        key = tool_list_key(tools)
        if key is None:
            return self._build(tools)  # not plain JSON: nothing to key it by
        digest, weight = key.digest, key.size
        with self._lock:
            entry = self._stages.get(digest)
            if entry is not None:
                self._stages.move_to_end(digest)
                return entry[0]
        stage = self._build(tools)  # a bad schema raises here, and is never kept
        if weight > self._max_bytes:
            return stage
        with self._lock:
            if digest not in self._stages:
                self._stages[digest] = (stage, weight)
                self._bytes += weight
            while len(self._stages) > self._size or self._bytes > self._max_bytes:
                _, (_, dropped) = self._stages.popitem(last=False)
                self._bytes -= dropped
        return stage

    def _build(self, tools: Any) -> JudgeStage:
        return JudgeStage(
            tools=tools,
            policy=self._policy,
            truncated_calls=self._truncated_calls,
            check_budget=self._check_budget,
        )


class ToolListKey(NamedTuple):
    """What a tool list is kept by: the digest of its canonical JSON, and that JSON's size.

    The size is the list's compact JSON size too (sorting keys changes no length), so it
    bounds each tool's and their sum: ``tools_refusal`` checks no tool one by one when the
    whole list is within its limits.
    """

    digest: bytes
    size: int


def tool_list_key(tools: Any) -> ToolListKey | None:
    """``tools``' :class:`ToolListKey`; ``None`` when it is not plain JSON."""
    try:
        canonical = _canonical(tools)
    except (TypeError, msgspec.EncodeError, RecursionError, UnicodeEncodeError):
        return None  # (a lone surrogate in a name or schema: not plain JSON either)
    return ToolListKey(hashlib.blake2b(canonical, digest_size=32).digest(), len(canonical))
