"""The proxy's upstream pool (``serve/pool.py``): httpcore's pool, its pass linear (issue 20).

Counts, not wall-clock: how many assignment passes a request costs, how many connections the
pool opens and keeps. A real loopback upstream; httpcore's own request API.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpcore
import pytest
from heal.upstream import HealUpstream, running_upstream

from toolwire.serve.pool import UpstreamPool

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


class _CountedPool(UpstreamPool):
    """Counts its assignment passes and the connections it opens."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        self.passes = 0
        self.opened = 0

    def _assign_requests_to_connections(self) -> list[httpcore.AsyncConnectionInterface]:
        self.passes += 1
        return super()._assign_requests_to_connections()

    def create_connection(self, origin: httpcore.Origin) -> httpcore.AsyncConnectionInterface:
        self.opened += 1
        return super().create_connection(origin)


async def _hold_open(pool: UpstreamPool, url: str, opened: anyio.Event, go: anyio.Event) -> None:
    async with pool.stream("GET", url) as response:
        assert response.status == 200
        opened.set()
        await go.wait()
        await response.aread()


async def _get_models(pool: UpstreamPool, upstream: HealUpstream) -> None:
    response = await pool.request("GET", f"{upstream.base_url}/models")
    assert response.status == 200


@pytest.mark.parametrize(
    ("keepalive_expiry", "opened"), [(5.0, 1), (0.0, 3)], ids=["kept-alive", "expired"]
)
async def test_one_request_at_a_time_reuses_a_connection_until_it_expires(
    anyio_backend: str, upstream: HealUpstream, keepalive_expiry: float, opened: int
) -> None:
    async with _CountedPool(
        max_connections=10, max_keepalive_connections=5, keepalive_expiry=keepalive_expiry
    ) as pool:
        for _ in range(3):
            await _get_models(pool, upstream)
            await anyio.sleep(0.01)
        assert pool.opened == opened  # an expired one is closed, not used again
        assert len(pool.connections) <= 1
        assert pool.passes == 6  # one when each request came, one when its response ended


async def test_a_burst_costs_two_passes_a_request_and_keeps_the_keepalive_cap(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    # httpcore's own pass gave one idle connection to every request queued in the same tick:
    # all but one failed and ran the pass again (2.6 passes a request under healing's burst).
    async with _CountedPool(max_connections=100, max_keepalive_connections=5) as pool:
        for _round in range(2):
            go = anyio.Event()
            async with anyio.create_task_group() as group:
                opened = [anyio.Event() for _ in range(20)]
                for event in opened:
                    group.start_soon(_hold_open, pool, f"{upstream.base_url}/models", event, go)
                for event in opened:
                    await event.wait()
                assert len(pool.connections) == 20  # one each while they are open
                go.set()
            # Five kept alive (httpcore counted every connection against the cap, not the
            # idle ones, and closed each one that ended past it).
            assert len(pool.connections) == 5
            assert all(connection.is_idle() for connection in pool.connections)
        assert pool.passes == 2 * 40
        assert pool.opened == 20 + 15  # the five kept alive are used again


async def test_no_more_connections_than_allowed_and_the_rest_wait(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    async with _CountedPool(max_connections=3, max_keepalive_connections=3) as pool:
        seen: list[int] = []

        async def one() -> None:
            await _get_models(pool, upstream)
            seen.append(len(pool.connections))

        async with anyio.create_task_group() as group:
            for _ in range(12):
                group.start_soon(one)
        assert len(seen) == 12
        assert max(seen) <= 3
        assert pool.opened == 3
