"""Each provider's turns carry its own ``gen_ai.provider.name``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolwire

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "adapters"))
from test_same_turn_every_format import FORMATS

pytestmark = pytest.mark.anyio

NAMES = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "ollama": "ollama",
}


@pytest.mark.parametrize("provider", sorted(FORMATS))
async def test_the_turn_span_names_the_provider(
    provider: str, tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    turn = await toolwire.collect(FORMATS[provider](False), provider,
                                  tracer_provider=tracer_provider)
    assert turn.provider == NAMES[provider]
    (span,) = [s for s in span_exporter.get_finished_spans() if s.name == "toolwire.turn"]
    assert (span.attributes or {})["gen_ai.provider.name"] == NAMES[provider]
