"""``toolwire serve`` and the constrained re-ask (issue 31): on by default, off per proxy
(``constrain = false``, ``--no-constrain``), per tool (``unconstrained_tools``,
``--unconstrained-tool``) and per request (``x-toolwire-constrain: off``), and the whole response
says which calls a constrained re-ask brought (``x-toolwire-constrained``).

The app runs in process (``httpx.ASGITransport``), in front of the scripted upstream of the
healing tests, which records what it received.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from heal.upstream import HealUpstream, Reply, completion, running_upstream

from toolwire.cli.serve import add_serve_parser
from toolwire.serve import ServeSettings, create_app
from toolwire.serve.settings import load_settings

pytestmark = [pytest.mark.anyio]

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}
TOOLS = [
    {"type": "function", "function": {"name": "write", "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "read", "parameters": SCHEMA}},
]
BROKEN = ("call_1", "write", '{"path": 3}')
GOOD = ("call_2", "write", '{"path": "a.txt", "content": "hi"}')


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


async def _ask(
    upstream: HealUpstream, headers: dict[str, str] | None = None, **settings: Any
) -> httpx.Response:
    upstream.script(Reply(completion(BROKEN)), Reply(completion(GOOD)))
    app = create_app(ServeSettings(upstream=upstream.base_url, provider="llama-server", **settings))
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://proxy.test"
        ) as client:
            return await client.post(
                "/v1/chat/completions",
                json={"model": "local", "messages": [{"role": "user", "content": "hi"}],
                      "tools": TOOLS},
                headers=headers or {},
            )  # fmt: skip
    finally:
        await app.aclose()


async def test_the_proxy_re_asks_constrained_and_says_so(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    response = await _ask(upstream)
    assert response.status_code == 200
    assert response.headers["x-toolwire-constrained"] == "write=1"
    _, retry = upstream.requests
    assert retry["json_schema"]["properties"]["name"] == {"const": "write"}


@pytest.mark.parametrize(
    ("headers", "settings"),
    [
        pytest.param({"x-toolwire-constrain": "off"}, {}, id="request"),
        pytest.param({}, {"constrain": False}, id="proxy"),
        pytest.param({}, {"unconstrained_tools": ("write",)}, id="tool"),
    ],
)
async def test_the_proxy_s_constraint_can_be_turned_off(
    anyio_backend: str,
    upstream: HealUpstream,
    headers: dict[str, str],
    settings: dict[str, Any],
) -> None:
    response = await _ask(upstream, headers, **settings)
    assert response.status_code == 200
    assert "x-toolwire-constrained" not in response.headers
    _, retry = upstream.requests
    assert "json_schema" not in retry


def test_the_flags_set_the_constraint_and_the_budget() -> None:
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers())
    args = parser.parse_args(
        [
            "serve",
            "--upstream",
            "http://127.0.0.1:8080/v1",
            "--no-constrain",
            "--unconstrained-tool",
            "write",
            "--unconstrained-tool",
            "run",
            "--max-tokens-factor",
            "4",
        ]
    )
    settings = load_settings(
        None,
        upstream=args.upstream,
        constrain=False if args.no_constrain else None,
        unconstrained_tools=tuple(args.unconstrained_tool),
        max_tokens_factor=args.max_tokens_factor,
    )
    assert settings.constrain is False
    assert settings.unconstrained_tools == ("write", "run")
    assert settings.max_tokens_factor == 4.0
    assert load_settings(None, upstream="http://127.0.0.1:8080/v1").constrain is True


def test_a_factor_below_one_is_refused() -> None:
    with pytest.raises(Exception, match="max_tokens_factor"):
        load_settings(None, upstream="http://127.0.0.1:8080/v1", max_tokens_factor=0.5)
