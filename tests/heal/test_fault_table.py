"""Every row of the fault table in ``docs/healing.md``: five formats, streamed and whole, each
fault of the network injected by a loopback upstream (``tests/heal/faults.py``).

The network's faults are not the model's (issue 18): a drop or a reset while a call is being
written sends the same request once more (two upstream requests, whatever ``max_retries``
says); a stall ends the exchange at the first read timeout (one request); bytes that break
HTTP end it at once (one request); the client's error says which it was, never that the model
sent something, and a whole exchange's error tells the SDK not to send it again. A retry that
gets HTTP 500 is not sent again by the SDK either. Each row's client error also carries no
call: nothing broken reached it.
"""

from __future__ import annotations

import pytest

from .faults import FAULTS, FORMATS, Fault, run_case

pytestmark = pytest.mark.anyio

#: Seconds of silence that end a stall (short: the suite must not wait).
READ_TIMEOUT = 0.2

#: fault -> (the code of the client's error, its HTTP status when whole, upstream requests).
EXPECTED: dict[Fault, tuple[str | None, int, int]] = {
    "drop_once": (None, 200, 2),
    "drop": ("upstream_dropped", 502, 2),
    "reset": ("upstream_dropped", 502, 2),
    "stall": ("upstream_timeout", 504, 1),
    "garbage": ("upstream_protocol_error", 502, 1),
    "retry_5xx": ("retry_http_status", 500, 2),
}


#: The quick loop (``-m "not slow"``) runs Chat's rows; the full suite every format's.
NAMES = [name if name == "Chat" else pytest.param(name, marks=pytest.mark.slow) for name in FORMATS]


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("name", NAMES)
async def test_each_fault_of_the_network_ends_as_the_table_says(
    anyio_backend: str, name: str, fault: Fault, streamed: bool
) -> None:
    outcome = await run_case(FORMATS[name], fault, streamed, read_timeout=READ_TIMEOUT)
    code, whole_status, requests = EXPECTED[fault]
    assert outcome.requests == requests
    assert not outcome.dropped
    assert b"the model sent" not in outcome.body
    if code is None:
        # The same request, sent again once, brought the call: the client never knew.
        assert outcome.call
        assert outcome.status == 200
        assert outcome.should_retry is None
        return
    assert not outcome.call
    if streamed:
        assert outcome.status == 200
        assert outcome.code == code
    else:
        assert outcome.status == whole_status
        # The SDK must not send the exchange again: it would repeat every request made.
        assert outcome.should_retry == "false"
        if fault != "retry_5xx":  # (the retry's own 500 body reaches the client unchanged)
            assert outcome.code == code
    if fault == "stall":
        assert outcome.seconds >= READ_TIMEOUT
    if code.startswith("upstream_"):
        assert b"not of the model" in outcome.body


async def test_a_drop_is_sent_again_even_with_no_retries(anyio_backend: str) -> None:
    """The one resend after a drop is not a retry of ``max_retries``: nothing is asked of the
    model, so ``max_retries=0`` (reject without asking again) does not turn it off."""
    outcome = await run_case(FORMATS["Chat"], "drop_once", True, max_retries=0)
    assert outcome.requests == 2
    assert outcome.call
