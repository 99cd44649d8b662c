"""OpenAI Responses (``POST /v1/responses``, ``stream: true``): mapper, history, requests."""

from ...core.mapper import MapperSettings, ProviderMapper
from ..provider import Provider
from .history import OpenAIResponsesHistory as OpenAIResponsesHistory
from .items import ResponsesOutputItem as ResponsesOutputItem
from .items import output_items as output_items
from .mapper import OpenAIResponsesMapper as OpenAIResponsesMapper
from .request import read_responses_request as read_responses_request
from .wire import stop_reason_from_responses as stop_reason_from_responses

__all__ = [
    "PROVIDERS",
    "OpenAIResponsesHistory",
    "OpenAIResponsesMapper",
    "ResponsesOutputItem",
    "output_items",
    "read_responses_request",
    "stop_reason_from_responses",
]


def _open_mapper(settings: MapperSettings) -> ProviderMapper:
    return OpenAIResponsesMapper(settings)


#: The provider names that read Responses streams.
PROVIDERS: dict[str, Provider] = {
    "openai-responses": Provider(
        "openai", _open_mapper, OpenAIResponsesHistory(), read_responses_request
    ),
}
