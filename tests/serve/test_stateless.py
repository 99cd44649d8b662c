"""``toolwire serve`` keeps nothing of one request for another (``docs/serve.md``, "Stateless").

In-process: the app in front of a scripted upstream transport, two clients one after the other.
"""

from __future__ import annotations

import httpx
import pytest

from toolwire.serve import ServeSettings, create_app

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("heal", [True, False], ids=["healing", "bare"])
async def test_a_cookie_the_upstream_set_for_one_client_never_goes_up_for_another(
    anyio_backend: str, heal: bool
) -> None:
    # Sent through httpx.AsyncClient, the proxy kept the upstream's Set-Cookie in the client's
    # jar and sent it upstream with every later request, whoever sent it (issue 20).
    cookies: list[str | None] = []

    def upstream(request: httpx.Request) -> httpx.Response:
        cookies.append(request.headers.get("cookie"))
        return httpx.Response(
            200,
            headers={"set-cookie": "session=alice; Path=/", "content-type": "application/json"},
            stream=httpx.ByteStream(b'{"data": []}'),
        )

    app = create_app(
        ServeSettings(upstream="http://upstream.test/v1", heal=heal),
        upstream_transport=httpx.MockTransport(upstream),
    )
    try:
        for _client in ("alice", "bob"):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
                response = await client.get("/v1/models")
            assert response.status_code == 200
            assert response.headers["set-cookie"] == "session=alice; Path=/"  # passed on as is
    finally:
        await app.aclose()
    assert cookies == [None, None]
