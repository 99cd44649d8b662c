"""Judging one call in a worker process, and the verdict when that could not finish in time.

``jsonschema-rs`` holds the GIL for the whole of one validation, so a costly check in a worker
thread still stops the event loop (issue 29, H2: a 200 KB argument against ``a\\w{1000}c``
stalled it 35 s). A call whose check is priced too high for the loop (``SchemaCost``) is judged
in a worker process instead, where it can also be stopped. This module is both ends of that
process's protocol, so that they cannot drift apart:

- the process itself (:func:`main`, started by ``toolwire.stages.judge_process``) reads
  :class:`WorkerRequest` frames on its standard input and answers each with a ``Verdict``
  frame (4 bytes of length, big-endian, then a pickle: exact for every value the judge makes,
  where msgpack has no integer past 64 bits and JSON no infinity; both ends are toolwire's
  own); it runs at a lower CPU priority, so that the process serving the clients is scheduled
  first, and it ends when its input does;
- :func:`unchecked_verdict`: the rejection when the budget ran out first. It blames no one: it
  says toolwire could not finish the check, and that nothing was found wrong.

The process imports toolwire and nothing of the program that started it (``anyio.to_process``
and ``multiprocessing`` re-run the parent's ``__main__`` file in each worker: an agent script
without a ``__main__`` guard would run again).
"""

from __future__ import annotations

import os
import pickle
import sys
from collections import OrderedDict
from typing import IO, Literal

import msgspec

from ..core.verdict import Verdict
from ._core import parse_arguments
from ._message import render_message
from ._policy import Policy
from ._schema import SchemaChecker

__all__ = [
    "READY",
    "UNCHECKED_DETAILS",
    "WorkerRequest",
    "judge_in_worker",
    "read_frame",
    "unchecked_verdict",
    "write_frame",
]

#: What the process writes once it can take requests.
READY = b"READY\n"
#: The compiled schemas a worker keeps, by their canonical JSON (an agent sends the same tools
#: every turn; a worker lives for minutes).
_KEPT = 32
_checkers: OrderedDict[bytes, SchemaChecker] = OrderedDict()


class WorkerRequest(msgspec.Struct, frozen=True):
    """One call to judge: what ``parse_arguments`` takes, the schema as canonical JSON."""

    raw: str
    tool: str
    schema_json: bytes
    policy: Policy
    truncated: bool | None
    arguments_form: Literal["string", "object"]
    call_id: str | None


_HEADER = 4


def write_frame(stream: IO[bytes], payload: WorkerRequest | Verdict) -> None:
    """Write one frame (length, then the pickle) and flush it."""
    body = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(body).to_bytes(_HEADER, "big") + body)
    stream.flush()


def read_frame(stream: IO[bytes]) -> bytes | None:
    """One frame's pickle, or ``None`` when the stream ended (before or inside a frame)."""
    header = stream.read(_HEADER)
    if len(header) < _HEADER:
        return None
    length = int.from_bytes(header, "big")
    body = stream.read(length)
    return body if len(body) == length else None


def _checker(schema_json: bytes, tool: str) -> SchemaChecker:
    checker = _checkers.get(schema_json)
    if checker is None:
        checker = SchemaChecker(msgspec.json.decode(schema_json), tool=tool)
        _checkers[schema_json] = checker
        while len(_checkers) > _KEPT:
            _checkers.popitem(last=False)
    else:
        _checkers.move_to_end(schema_json)
    return checker


def judge_in_worker(request: WorkerRequest) -> Verdict:
    """``parse_arguments`` for one call of a known tool, its schema given as JSON.

    The schema was compiled in the caller's process already, so it compiles here too.
    """
    return parse_arguments(
        request.raw,
        tool=request.tool,
        schema=_checker(request.schema_json, request.tool),
        policy=request.policy,
        truncated=request.truncated,
        arguments_form=request.arguments_form,
        call_id=request.call_id,
    )


#: Why a call was not checked, worded for the verdict's detail (``{budget}`` in seconds).
UNCHECKED_DETAILS = {
    "slow": "the check did not finish within toolwire's {budget:g} s budget",
    "busy": (
        "no worker was free to check them within toolwire's {budget:g} s budget (other costly "
        "checks were running)"
    ),
    "broken": "the worker process that checks costly calls failed before it answered",
}

UncheckedWhy = Literal["slow", "busy", "broken"]


def unchecked_verdict(
    *, raw: str, tool: str, call_id: str | None, budget: float, why: UncheckedWhy, truncated: bool
) -> Verdict:
    """The rejection of a call whose check did not finish (``why``: see
    :data:`UNCHECKED_DETAILS`). ``truncated``: the stream showed the call was cut."""
    verdict = Verdict(
        outcome="rejected",
        arguments=None,
        reason="unchecked",
        detail=UNCHECKED_DETAILS[why].format(budget=budget),
        raw_length=len(raw),
        truncated=truncated,
    )
    message = render_message(verdict, tool=tool, raw=raw, call_id=call_id)
    return msgspec.structs.replace(verdict, message=message)


def main() -> None:
    """Answer requests until standard input ends."""
    if hasattr(os, "nice"):
        os.nice(10)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but frames on the protocol's stream
    stdout.write(READY)
    stdout.flush()
    while (frame := read_frame(stdin)) is not None:
        request = pickle.loads(frame)
        assert type(request) is WorkerRequest
        write_frame(stdout, judge_in_worker(request))
