"""OpenAI Chat Completions, and every server that speaks it, both directions: mapper, history,
requests, server profiles, and the healing encoder, format and ``chat.completion`` bodies."""

from ...core.mapper import MapperSettings, ProviderMapper
from ..provider import Provider
from .encoder import ChatChunkEncoder as ChatChunkEncoder
from .encoder import encode_events as encode_events
from .healing import CHAT as CHAT
from .healing import ChatWireFormat as ChatWireFormat
from .healing import open_chat_format
from .history import OpenAIChatHistory as OpenAIChatHistory
from .mapper import OpenAIChatMapper as OpenAIChatMapper
from .mapper import finish_reason_from_openai as finish_reason_from_openai
from .profiles import CHAT_PROFILES, ServerProfile
from .request import read_chat_request as read_chat_request

__all__ = [
    "CHAT",
    "PROVIDERS",
    "ChatChunkEncoder",
    "ChatWireFormat",
    "OpenAIChatHistory",
    "OpenAIChatMapper",
    "encode_events",
    "finish_reason_from_openai",
    "read_chat_request",
]


def _provider(name: str, profile: ServerProfile) -> Provider:
    def open_mapper(settings: MapperSettings) -> ProviderMapper:
        return OpenAIChatMapper(settings, profile)

    return Provider(
        profile.gen_ai_name,
        open_mapper,
        OpenAIChatHistory.for_profile(profile),
        read_chat_request,
        open_chat_format(name),
        reads_text_calls=profile.reads_text_calls,
    )


#: Every provider name that reads Chat Completions streams, each with its server's profile.
PROVIDERS: dict[str, Provider] = {name: _provider(name, p) for name, p in CHAT_PROFILES.items()}
