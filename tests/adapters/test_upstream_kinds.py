"""The one name a healing upstream is given, and what it decides for every endpoint.

``HealingTransport(provider=...)`` and ``toolwire serve --provider`` take the kind of server the
upstream is. The registry answers from data on each provider: which Chat Completions profile
heals ``/chat/completions`` (``upstream_chat_provider``), and whether calls left in the text are
read on each healed format (``reads_text_calls_behind``): on a local server, on every endpoint
local servers serve; on a hosted API, only where the format itself is a local server's.
"""

from __future__ import annotations

import pytest

import toolwire
from toolwire.adapters.registry import (
    chat_provider_names,
    heal_formats,
    reads_text_calls_behind,
    upstream_chat_provider,
    upstream_names,
)
from toolwire.core.errors import ConfigurationError
from toolwire.serve import ServeSettings

LOCAL = ["llama-server", "llama-cpp", "vllm", "sglang", "lmstudio", "ollama-openai", "ollama"]
HOSTED = ["openai-chat", "openai", "azure-openai", "openrouter", "mistral", "xai", "deepseek"]


def test_the_names_are_every_chat_name_and_ollama() -> None:
    assert upstream_names() == sorted([*chat_provider_names(), "ollama"])
    assert "sglang" in upstream_names()
    assert not {"anthropic", "openai-responses", "gemini"} & set(upstream_names())


@pytest.mark.parametrize(
    ("upstream", "chat"),
    [("llama-server", "llama-server"), ("llama-cpp", "llama-cpp"), ("ollama", "ollama-openai")],
)
def test_the_chat_endpoint_is_healed_with_the_upstreams_profile(upstream: str, chat: str) -> None:
    assert upstream_chat_provider(upstream) == chat
    assert heal_formats(upstream)[0].provider == chat  # Chat Completions comes first


@pytest.mark.parametrize("name", ["anthropic", "openai-responses", "gemini", "nope", ""])
def test_a_name_that_is_no_kind_of_server_is_refused(name: str) -> None:
    with pytest.raises(ConfigurationError, match="kind of server the upstream is"):
        upstream_chat_provider(name)
    with pytest.raises(ConfigurationError, match="kind of server the upstream is"):
        toolwire.HealingTransport(provider=name)


@pytest.mark.parametrize("upstream", LOCAL)
def test_on_a_local_upstream_every_endpoint_local_servers_serve_reads_text_calls(
    upstream: str,
) -> None:
    chat = upstream_chat_provider(upstream)
    for name in (chat, "anthropic", "openai-responses", "ollama"):
        assert reads_text_calls_behind(name, upstream), name
    assert not reads_text_calls_behind("gemini", upstream)  # no local server serves it


@pytest.mark.parametrize("upstream", [*HOSTED, "openai-compatible"])
def test_on_a_hosted_upstream_only_api_chat_reads_text_calls(upstream: str) -> None:
    for name in (upstream, "anthropic", "openai-responses", "gemini"):
        assert not reads_text_calls_behind(name, upstream), name
    # Only local servers serve /api/chat: read whatever the upstream is named, as before.
    assert reads_text_calls_behind("ollama", upstream)


@pytest.mark.parametrize(("upstream", "reads"), [("llama-server", True), ("openai-chat", False)])
def test_the_transports_pipelines_follow_the_one_setting(upstream: str, reads: bool) -> None:
    transport = toolwire.HealingTransport(provider=upstream)
    reading = {
        wire.provider: transport.pipeline_for(wire)._text_calls is not None
        for wire in transport._formats
    }
    assert reading == {
        upstream: reads,
        "anthropic": reads,
        "openai-responses": reads,
        "ollama": True,
        "gemini": False,
    }
    assert transport.pipeline.provider == upstream


def test_sglang_is_a_local_chat_profile() -> None:
    assert toolwire.Pipeline("sglang")._text_calls is not None  # text_calls="auto": on
    assert toolwire.Pipeline("openai-compatible")._text_calls is None


@pytest.mark.parametrize("name", ["llama-server", "ollama", "sglang", "openai-chat"])
def test_the_proxy_takes_every_kind_of_server(name: str) -> None:
    assert ServeSettings(upstream="http://127.0.0.1:8080/v1", provider=name).provider == name


@pytest.mark.parametrize("name", ["anthropic", "gemini", "llama"])
def test_the_proxy_refuses_a_name_that_is_no_kind_of_server(name: str) -> None:
    with pytest.raises(ValueError, match="kind of server the upstream is"):
        ServeSettings(upstream="http://127.0.0.1:8080/v1", provider=name)
