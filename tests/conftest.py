"""Shared fixtures: both anyio backends, and the test data in ``tests/data`` (``data_paths``)."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Hashable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import optional_parts
import pytest
from data_paths import STREAMS, VECTORS

# Test modules import these helpers as ``from _toolwire_testdata import ...``: a plain
# ``from conftest import`` would be ambiguous as soon as another folder (tests/judge) has its own
# conftest.py, because pytest drops the bare ``conftest`` module name between conftest files.
sys.modules.setdefault("_toolwire_testdata", sys.modules[__name__])

#: The recordings of Chat-Completions-style servers (one mapper serves all three folders).
CHAT_FOLDERS = ("openai-chat", "openai-compatible", "llama-cpp-python")

#: Every folder of recordings -> the provider name it is read as.
PROVIDER_OF_FOLDER: dict[str, str] = {
    "openai-chat": "openai-chat",
    "openai-compatible": "openai-compatible",
    "llama-cpp-python": "llama-cpp",
    "openai-responses": "openai-responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "ollama": "ollama",
}


#: True when this run leaves the ``slow`` tier out (``pytest -m "not slow"``, the development
#: loop of docs/development.md); set by :func:`pytest_configure`, before any test module is read.
QUICK = False
#: The quick loop runs a hypothesis property with this share of its examples (1/5); the full
#: suite runs every one of them.
QUICK_SHARE = 5
_NOT_SLOW = re.compile(r"\bnot\s+slow\b")


def pytest_configure(config: pytest.Config) -> None:
    global QUICK
    QUICK = bool(_NOT_SLOW.search(config.getoption("markexpr") or ""))
    optional_parts.quick_tier = QUICK  # a missing optional part skips only in the quick tier
    _trust_one_root()


#: ``SSL_CERT_FILE`` as the run found it, and the file :func:`_trust_one_root` wrote instead.
_BEFORE: list[tuple[str | None, str]] = []
_ONE_ROOT_PREFIX = "toolwire-tests-one-root-"


def _trust_one_root() -> None:
    """Point ``SSL_CERT_FILE`` at one root certificate of certifi's bundle, for the whole run.

    Every test speaks plain HTTP to loopback (never the internet), yet httpx builds a TLS
    context for each client and transport it creates, loading every root of the bundle it is
    given (certifi's, or the system's that ``SSL_CERT_FILE`` names): 15-20 ms of CPU each,
    about 500 times in the quick loop (~8 s of its CPU). httpx (and so the openai, anthropic,
    google-genai and ollama SDKs, and ``toolwire serve``'s upstream client in its subprocess)
    reads ``SSL_CERT_FILE``; with one certificate in it the context costs well under a
    millisecond. No test makes a TLS connection, so none sees a difference. xdist's workers
    inherit the file of the process that started them; the value found is put back at the end.
    """
    found = os.environ.get("SSL_CERT_FILE")
    if found and Path(found).name.startswith(_ONE_ROOT_PREFIX):
        return  # a worker of a run that already did it
    import certifi

    bundle = Path(certifi.where()).read_text(encoding="ascii")
    end = "-----END CERTIFICATE-----"
    first = bundle[bundle.index("-----BEGIN CERTIFICATE-----") : bundle.index(end) + len(end)]
    handle, path = tempfile.mkstemp(prefix=_ONE_ROOT_PREFIX, suffix=".pem")
    with os.fdopen(handle, "w", encoding="ascii") as file:
        file.write(first + "\n")
    os.environ["SSL_CERT_FILE"] = path
    _BEFORE.append((found, path))


def pytest_unconfigure(config: pytest.Config) -> None:
    for found, path in _BEFORE:
        if found is None:
            os.environ.pop("SSL_CERT_FILE", None)
        else:
            os.environ["SSL_CERT_FILE"] = found
        Path(path).unlink(missing_ok=True)


#: Where the tests mostly wait rather than compute: for a ``toolwire serve`` or a ``toolwire``
#: command to start (0.5-1 s each), for loopback round trips through it.
_WAITING = ("serve/", "cli/", "demo/test_demo_extra.py", "demo/test_demo_command.py",
            "e2e/test_docs_example.py", "heal/test_transport_wire.py")  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the tests that wait first (otherwise in the order collected).

    pytest-xdist hands tests out in this order. Collected alphabetically, ``tests/serve`` came
    near the end, so one worker spent the last 20-30 s of the quick loop waiting on proxies
    while the other had finished. First, their waiting overlaps the other worker's computing,
    and the thousands of short tests even out the end.
    """
    here = Path(__file__).parent
    items.sort(key=lambda item: not item.path.relative_to(here).as_posix().startswith(_WAITING))


def examples(count: int) -> int:
    """``max_examples`` for a hypothesis property: ``count`` in the full suite, a fifth (at least
    10) in the quick loop, where the property still runs, on fewer generated cases."""
    return max(10, count // QUICK_SHARE) if QUICK else count


def quick_sample(
    cases: Sequence[Any], every: int, covers: Sequence[Callable[[Any], Hashable]] = ()
) -> list[Any]:
    """``cases`` for ``parametrize``, every one of them: each ``every``-th in the quick loop, the
    others marked ``slow`` (the full suite runs them all; a tuple case is several arguments).

    Each function of ``covers`` names a dimension of the grid (the recording, the variant...):
    every value it takes over ``cases`` must also be taken in the quick sample, so that the quick
    loop still meets every recording and every variant, only not every pairing. (On a grid of
    rows x columns in row order, an ``every`` prime to the number of columns rotates through them.)
    """
    sample = [case for number, case in enumerate(cases) if number % every == 0]
    for cover in covers:
        missing = {cover(case) for case in cases} - {cover(case) for case in sample}
        assert not missing, f"the quick sample (every {every}) never meets {sorted(missing)}"
    return [
        case
        if number % every == 0
        else pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=pytest.mark.slow)
        for number, case in enumerate(cases)
    ]


@pytest.fixture(params=[pytest.param("asyncio", id="asyncio"), pytest.param("trio", id="trio")])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on asyncio and on trio; a missing trio fails (no importorskip)."""
    backend: str = request.param
    if backend == "trio":
        import trio  # noqa: F401  (an ImportError here fails the test, it never skips)
    return backend


@pytest.fixture(scope="session")
def chat_upstream() -> Iterator[Any]:
    """The scripted Chat Completions upstream (``heal.upstream.HealUpstream``) of the proxy tests.

    One per test process (each xdist worker has its own), in front of which :func:`chat_proxy`
    and :func:`bare_chat_proxy` run: a ``toolwire serve`` process takes 0.5-1 s to start, and
    the modules that run it with the same settings used to start one each. A test starts from
    an empty script and empty records (``reset()``, by the modules' autouse fixtures); a test
    that needs other settings still starts its own proxy.
    """
    from heal.upstream import running_upstream

    with running_upstream() as scripted:
        yield scripted


@pytest.fixture(scope="session")
def chat_proxy(chat_upstream: Any) -> Iterator[Any]:
    """``toolwire serve --provider llama-cpp`` in front of :func:`chat_upstream`, shared."""
    from serve.proxy import running_proxy

    with running_proxy("--upstream", chat_upstream.base_url, "--provider", "llama-cpp") as proxy:
        yield proxy


@pytest.fixture(scope="session")
def bare_chat_proxy(chat_upstream: Any) -> Iterator[Any]:
    """``toolwire serve --no-heal`` in front of :func:`chat_upstream`, shared."""
    from serve.proxy import running_proxy

    with running_proxy("--upstream", chat_upstream.base_url, "--no-heal") as proxy:
        yield proxy


def stream_path(relative: str) -> Path:
    """The path of one recording, e.g. ``openai-chat/length_max_tokens_1_content.sse``."""
    path = STREAMS / relative
    assert path.is_file(), f"missing recording {path}"
    return path


def load_stream(relative: str) -> bytes:
    """The exact bytes of one recording."""
    return stream_path(relative).read_bytes()


def chat_recordings() -> list[str]:
    """Every recording (relative path) in the Chat-Completions-style folders, sorted."""
    found = [
        f"{folder}/{path.name}"
        for folder in CHAT_FOLDERS
        for path in sorted((STREAMS / folder).iterdir())
        if path.suffix == ".sse"
    ]
    assert found, f"no recordings under {STREAMS}"
    return found


def every_recording() -> list[tuple[str, str]]:
    """``(relative path, provider name)`` of every recording (SSE and NDJSON), folder by folder."""
    found = [
        (f"{folder}/{path.name}", provider)
        for folder, provider in PROVIDER_OF_FOLDER.items()
        for path in sorted((STREAMS / folder).iterdir())
        if path.suffix in (".sse", ".ndjson")
    ]
    assert found, f"no recordings under {STREAMS}"
    return found


_LINE_END = re.compile(rb"\r\n|\r|\n")


def data_payloads(body: bytes) -> list[bytes]:
    """The ``data:`` payloads of an SSE body, ``[DONE]`` included (one line per event here)."""
    payloads = []
    for line in _LINE_END.split(body):
        if line.startswith(b"data:"):
            payload = line[5:]
            payloads.append(payload[1:] if payload[:1] == b" " else payload)
    return payloads


def json_chunks(body: bytes) -> list[dict[str, Any]]:
    """Every JSON chunk of an SSE body, decoded with the standard library (``[DONE]`` dropped)."""
    return [json.loads(p) for p in data_payloads(body) if p.strip() != b"[DONE]"]


def load_vectors(name: str) -> list[dict[str, Any]]:
    """The lines of one ``tests/data/vectors/*.jsonl`` file."""
    lines = (VECTORS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def sse_body(chunks: Iterable[dict[str, Any] | bytes | str], *, done: bool = True) -> bytes:
    """Frame chunks as an SSE body: dicts are JSON-encoded, bytes/str are sent verbatim."""
    parts = []
    for chunk in chunks:
        if isinstance(chunk, dict):
            payload = json.dumps(chunk).encode()
        elif isinstance(chunk, str):
            payload = chunk.encode()
        else:
            payload = chunk
        parts.append(b"data: " + payload + b"\n\n")
    if done:
        parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def chat_chunk(
    delta: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One realistic Chat Completions chunk with a single choice."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1727346178,
        "model": "gpt-test",
        "choices": [
            {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}
        ],
        **extra,
    }


async def aiter_items(items: Iterable[Any]) -> AsyncIterator[Any]:
    """An async iterable over ``items`` (bytes reads or SDK chunk objects)."""
    for item in items:
        yield item
