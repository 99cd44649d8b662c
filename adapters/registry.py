"""Provider names accepted by ``collect`` / ``stream`` and the mapper each one uses.

Several names lead to the same wire format; the name still matters, because it becomes the
``gen_ai.provider.name`` on spans and metrics.
"""

from __future__ import annotations

from ..pipeline.errors import ConfigurationError
from ..pipeline.mapper import MapperFactory, ProviderMapper
from .history import HistoryFormat
from .openai_chat import OpenAIChatHistory, OpenAIChatMapper

__all__ = [
    "PROVIDERS",
    "history_format",
    "open_mapper",
    "provider_names",
]


def _openai_chat(gen_ai_name: str) -> MapperFactory:
    def factory(max_tokens: int | None, argument_deltas: bool) -> ProviderMapper:
        return OpenAIChatMapper(
            max_tokens=max_tokens, provider_name=gen_ai_name, argument_deltas=argument_deltas
        )

    return factory


#: provider name -> factory of a fresh mapper for one stream.
PROVIDERS: dict[str, MapperFactory] = {
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


def open_mapper(
    provider: str, max_tokens: int | None, *, argument_deltas: bool = True
) -> ProviderMapper:
    """A fresh mapper for one stream of ``provider``.

    ``argument_deltas=False`` skips the per-piece ``ToolCallArgumentsDelta`` events (the pieces
    are still accumulated): ``collect`` uses it when no stage of the caller's will read them.
    """
    factory = PROVIDERS.get(provider)
    if factory is None:
        raise ConfigurationError(
            f"unknown provider {provider!r}; expected one of: {', '.join(provider_names())}"
        )
    if max_tokens is not None and (
        type(max_tokens) is not int or max_tokens < 1  # bool is an int, and is not a limit
    ):
        raise ConfigurationError(f"max_tokens must be a positive int, got {max_tokens!r}")
    return factory(max_tokens, argument_deltas)


def history_format(provider: str) -> HistoryFormat:
    """The history format (assistant turn, tool results, check) of ``provider``."""
    if provider not in PROVIDERS:
        raise ConfigurationError(
            f"unknown provider {provider!r}; expected one of: {', '.join(provider_names())}"
        )
    return OpenAIChatHistory()
