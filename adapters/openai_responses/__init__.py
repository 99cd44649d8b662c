"""OpenAI Responses (``POST /v1/responses``, ``stream: true``), both directions: mapper,
history, requests, and the healing encoder and format."""

from ..provider import Provider
from .encoder import ResponsesEventEncoder as ResponsesEventEncoder
from .healing import RESPONSES as RESPONSES
from .healing import open_responses_format
from .history import OpenAIResponsesHistory as OpenAIResponsesHistory
from .items import ResponsesOutputItem as ResponsesOutputItem
from .items import output_items as output_items
from .mapper import OpenAIResponsesMapper as OpenAIResponsesMapper
from .request import read_responses_request as read_responses_request
from .wire import stop_reason_from_responses as stop_reason_from_responses

__all__ = [
    "PROVIDERS",
    "RESPONSES",
    "OpenAIResponsesHistory",
    "OpenAIResponsesMapper",
    "ResponsesEventEncoder",
    "ResponsesOutputItem",
    "output_items",
    "read_responses_request",
    "stop_reason_from_responses",
]


#: The provider names that read Responses streams. Local servers serve ``/v1/responses`` too:
#: llama-server (converted to a Chat request, ``tools/server/server-chat.cpp``), vLLM, SGLang
#: (``python/sglang/srt/entrypoints/openai/serving_responses.py``), Ollama (stateless, docs
#: "OpenAI compatibility") and LM Studio (>= 0.3.29).
PROVIDERS: dict[str, Provider] = {
    "openai-responses": Provider(
        "openai",
        OpenAIResponsesMapper,
        OpenAIResponsesHistory(),
        read_responses_request,
        open_responses_format,
        served_by_local_servers=True,
    ),
}
