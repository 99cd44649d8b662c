"""Anthropic Messages (``POST /v1/messages``, ``stream: true``), both directions: mapper,
history, requests, and the healing encoder and format."""

from ..provider import Provider
from .blocks import recorded_content as recorded_content
from .encoder import AnthropicEventEncoder as AnthropicEventEncoder
from .healing import ANTHROPIC as ANTHROPIC
from .healing import open_anthropic_format
from .history import AnthropicHistory as AnthropicHistory
from .mapper import AnthropicMapper as AnthropicMapper
from .request import read_anthropic_request as read_anthropic_request
from .wire import STOP_REASONS as STOP_REASONS
from .wire import finish_reason_from_anthropic as finish_reason_from_anthropic
from .wire import is_retryable as is_retryable

__all__ = [
    "ANTHROPIC",
    "PROVIDERS",
    "STOP_REASONS",
    "AnthropicEventEncoder",
    "AnthropicHistory",
    "AnthropicMapper",
    "finish_reason_from_anthropic",
    "is_retryable",
    "read_anthropic_request",
    "recorded_content",
]


#: The provider name ``anthropic`` (``gen_ai.provider.name`` ``anthropic``). Local servers
#: serve ``/v1/messages`` too, each through its Chat Completions tool parser: llama-server
#: (ggml-org/llama.cpp#17570: converted to a Chat request, ``tools/server/server-chat.cpp``),
#: vLLM (``vllm/entrypoints/anthropic/serving.py``, on ``OpenAIServingChat``), SGLang
#: (``python/sglang/srt/entrypoints/anthropic/``), Ollama (>= 0.14.0) and LM Studio (>= 0.4.1).
PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider(
        "anthropic",
        AnthropicMapper,
        AnthropicHistory(),
        read_anthropic_request,
        open_anthropic_format,
        served_by_local_servers=True,
    ),
}
