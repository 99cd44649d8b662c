"""Provider names accepted by ``collect`` / ``stream`` and the mapper each one uses.

Several names lead to the same wire format; the name still matters, because it becomes the
``gen_ai.provider.name`` on spans and metrics.
"""

from __future__ import annotations

from collections.abc import Callable

from ..pipeline.errors import ConfigurationError
from .base import ProviderMapper
from .openai_chat import OpenAIChatMapper

__all__ = ["PROVIDERS", "open_mapper", "provider_names"]

_Factory = Callable[[int | None], ProviderMapper]


def _openai_chat(gen_ai_name: str) -> _Factory:
    def factory(max_tokens: int | None) -> ProviderMapper:
        return OpenAIChatMapper(max_tokens=max_tokens, provider_name=gen_ai_name)

    return factory


#: provider name -> factory of a fresh mapper for one stream.
PROVIDERS: dict[str, _Factory] = {
    "openai-chat": _openai_chat("openai"),
    "openai": _openai_chat("openai"),
    "azure-openai": _openai_chat("azure.ai.openai"),
    "openai-compatible": _openai_chat("openai"),
    "llama-cpp": _openai_chat("llama.cpp"),
    "llama-server": _openai_chat("llama.cpp"),
    "vllm": _openai_chat("vllm"),
    "lmstudio": _openai_chat("lmstudio"),
    "ollama-openai": _openai_chat("ollama"),
    "openrouter": _openai_chat("openrouter"),
    "mistral": _openai_chat("mistral_ai"),
    "xai": _openai_chat("x_ai"),
    "dashscope": _openai_chat("dashscope"),
    "deepseek": _openai_chat("deepseek"),
}


def provider_names() -> list[str]:
    """Every accepted provider name, sorted."""
    return sorted(PROVIDERS)


def open_mapper(provider: str, max_tokens: int | None) -> ProviderMapper:
    """A fresh mapper for one stream of ``provider``."""
    factory = PROVIDERS.get(provider)
    if factory is None:
        raise ConfigurationError(
            f"unknown provider {provider!r}; expected one of: {', '.join(provider_names())}"
        )
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise ConfigurationError(f"max_tokens must be a positive int, got {max_tokens!r}")
    return factory(max_tokens)
