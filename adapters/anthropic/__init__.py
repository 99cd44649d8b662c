"""Anthropic Messages (``POST /v1/messages``, ``stream: true``): mapper, history, requests."""

from ...core.mapper import MapperSettings, ProviderMapper
from ..provider import Provider
from .blocks import recorded_content as recorded_content
from .history import AnthropicHistory as AnthropicHistory
from .mapper import AnthropicMapper as AnthropicMapper
from .request import read_anthropic_request as read_anthropic_request
from .wire import STOP_REASONS as STOP_REASONS
from .wire import finish_reason_from_anthropic as finish_reason_from_anthropic
from .wire import is_retryable as is_retryable

__all__ = [
    "PROVIDERS",
    "STOP_REASONS",
    "AnthropicHistory",
    "AnthropicMapper",
    "finish_reason_from_anthropic",
    "is_retryable",
    "read_anthropic_request",
    "recorded_content",
]


def _open_mapper(settings: MapperSettings) -> ProviderMapper:
    return AnthropicMapper(settings)


#: The provider name ``anthropic`` (``gen_ai.provider.name`` ``anthropic``).
PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider("anthropic", _open_mapper, AnthropicHistory(), read_anthropic_request),
}
