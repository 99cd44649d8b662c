"""OpenAI Chat Completions, and every server that speaks it: mapper, history, requests, profiles."""

from ...core.mapper import MapperSettings, ProviderMapper
from ..provider import Provider
from .history import OpenAIChatHistory as OpenAIChatHistory
from .mapper import OpenAIChatMapper as OpenAIChatMapper
from .mapper import finish_reason_from_openai as finish_reason_from_openai
from .profiles import CHAT_PROFILES, ServerProfile
from .request import read_chat_request as read_chat_request

__all__ = [
    "PROVIDERS",
    "OpenAIChatHistory",
    "OpenAIChatMapper",
    "finish_reason_from_openai",
    "read_chat_request",
]


def _provider(profile: ServerProfile) -> Provider:
    def open_mapper(settings: MapperSettings) -> ProviderMapper:
        return OpenAIChatMapper(settings, profile)

    return Provider(
        profile.gen_ai_name,
        open_mapper,
        OpenAIChatHistory(
            empty_content=profile.empty_assistant_content, result_role=profile.tool_result_role
        ),
        read_chat_request,
    )


#: Every provider name that reads Chat Completions streams, each with its server's profile.
PROVIDERS: dict[str, Provider] = {name: _provider(p) for name, p in CHAT_PROFILES.items()}
