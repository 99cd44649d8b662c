"""Ollama's native chat API (``POST /api/chat``, NDJSON), both directions: mapper, history,
requests, and the healing encoder and format.

Ollama's OpenAI-compatible ``/v1`` endpoint is read by :mod:`toolwire.adapters.openai_chat`
(provider name ``ollama-openai``); this package reads the native API (provider name ``ollama``).
"""

from ..provider import Provider
from .encoder import OllamaLineEncoder as OllamaLineEncoder
from .healing import OLLAMA as OLLAMA
from .healing import open_ollama_format
from .history import OllamaHistory as OllamaHistory
from .mapper import OllamaMapper as OllamaMapper
from .mapper import finish_reason_from_ollama as finish_reason_from_ollama
from .request import read_ollama_request as read_ollama_request

__all__ = [
    "OLLAMA",
    "PROVIDERS",
    "OllamaHistory",
    "OllamaLineEncoder",
    "OllamaMapper",
    "finish_reason_from_ollama",
    "read_ollama_request",
]


#: The provider name that reads (and heals) Ollama's native chat streams. Only local servers
#: serve ``/api/chat`` (Ollama, and SGLang's ``python/sglang/srt/entrypoints/ollama/``), so its
#: calls left in the text are read whatever the upstream is named; an upstream named
#: ``ollama`` heals its Chat endpoint (``/v1``) with the ``ollama-openai`` profile.
PROVIDERS: dict[str, Provider] = {
    "ollama": Provider(
        "ollama",
        OllamaMapper,
        OllamaHistory(),
        read_ollama_request,
        open_ollama_format,
        reads_text_calls=True,
        served_by_local_servers=True,
        chat_provider="ollama-openai",
    ),
}
