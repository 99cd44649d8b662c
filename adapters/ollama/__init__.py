"""Ollama's native chat API (``POST /api/chat``, NDJSON): mapper, history, requests.

Ollama's OpenAI-compatible ``/v1`` endpoint is read by :mod:`toolwire.adapters.openai_chat`
(provider name ``ollama-openai``); this package reads the native API (provider name ``ollama``).
"""

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


#: The provider name that reads Ollama's native chat streams (not healed yet).
PROVIDERS: dict[str, Provider] = {
    "ollama": Provider(
        "ollama", OllamaMapper, OllamaHistory(), read_ollama_request, reads_text_calls=True
    ),
}
