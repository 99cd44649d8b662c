"""What each OpenAI-compatible server does differently, learned from the server itself.

One wire format, many servers: a quirk that only one server has belongs to that server's
provider name, never to every Chat-Completions stream. Each fact here was seen on the server
(the recordings in ``shared/fixtures/streams/`` and the tests that start it).
"""

from __future__ import annotations

import msgspec

__all__ = ["CHAT_PROFILES", "ServerProfile"]


class ServerProfile(msgspec.Struct, frozen=True, kw_only=True):
    """One OpenAI-compatible server's quirks that toolwire must know about."""

    #: The ``gen_ai.provider.name`` for spans and metrics.
    gen_ai_name: str
    #: The server reports ``finish_reason: tool_calls`` for a call cut at ``max_tokens``, so a
    #: call that stops inside a value is evidence of the limit (unless a stop sequence or usage
    #: below the limit speaks against it). llama-cpp-python does this: see the
    #: ``llama-cpp-python/*_cut_*.real.sse`` recordings.
    hides_length_finish: bool = False
    #: What an assistant turn with tool calls and no text sends as ``content``. OpenAI
    #: documents ``null``; llama-cpp-python answers HTTP 500 to ``null`` and an empty 200 when
    #: the field is left out, and accepts only ``""``.
    empty_assistant_content: str | None = None


#: provider name -> profile, for every name that reads Chat Completions streams.
CHAT_PROFILES: dict[str, ServerProfile] = {
    "openai-chat": ServerProfile(gen_ai_name="openai"),
    "openai": ServerProfile(gen_ai_name="openai"),
    "azure-openai": ServerProfile(gen_ai_name="azure.ai.openai"),
    "openai-compatible": ServerProfile(gen_ai_name="openai"),
    "llama-cpp": ServerProfile(
        gen_ai_name="llama.cpp", hides_length_finish=True, empty_assistant_content=""
    ),
    "llama-server": ServerProfile(gen_ai_name="llama.cpp"),
    "vllm": ServerProfile(gen_ai_name="vllm"),
    "lmstudio": ServerProfile(gen_ai_name="lmstudio"),
    "ollama-openai": ServerProfile(gen_ai_name="ollama"),
    "openrouter": ServerProfile(gen_ai_name="openrouter"),
    "mistral": ServerProfile(gen_ai_name="mistral_ai"),
    "xai": ServerProfile(gen_ai_name="x_ai"),
    "dashscope": ServerProfile(gen_ai_name="dashscope"),
    "deepseek": ServerProfile(gen_ai_name="deepseek"),
}
