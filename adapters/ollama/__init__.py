"""Ollama's native chat API (``POST /api/chat``, NDJSON): mapper, history, requests.

Ollama's OpenAI-compatible ``/v1`` endpoint is read by :mod:`toolwire.adapters.openai_chat`
(provider name ``ollama-openai``); this package reads the native API (provider name ``ollama``).
"""

from ...core.mapper import MapperSettings, ProviderMapper
from ..provider import Provider
from .history import OllamaHistory as OllamaHistory
from .mapper import OllamaMapper as OllamaMapper
from .mapper import finish_reason_from_ollama as finish_reason_from_ollama
from .request import read_ollama_request as read_ollama_request

__all__ = [
    "PROVIDERS",
    "OllamaHistory",
    "OllamaMapper",
    "finish_reason_from_ollama",
    "read_ollama_request",
]


def _open_mapper(settings: MapperSettings) -> ProviderMapper:
    return OllamaMapper(settings)


#: The provider name that reads Ollama's native chat streams.
PROVIDERS: dict[str, Provider] = {
    "ollama": Provider("ollama", _open_mapper, OllamaHistory(), read_ollama_request),
}
