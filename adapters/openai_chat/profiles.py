"""What each OpenAI-compatible server does differently, learned from the server itself.

One wire format, many servers: a quirk that only one server has belongs to that server's
provider name, never to every Chat-Completions stream. Each fact here was seen on the server
(the recordings in ``tests/data/fixtures/streams/`` and ``toolwire/recordings/``, the prompt the
server printed with ``--verbose true``, and the tests that start it: ``tests/demo/``).
``docs/local-servers.md`` tells the whole story of each one.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..constraints import LLAMA_CPP, LLAMA_CPP_PYTHON, OPENAI_STRICT, STRUCTURED_OUTPUTS
from .constrain import ChatForcing

__all__ = ["CHAT_PROFILES", "ServerProfile", "TextCallsInHistory", "ToolResultRole"]

#: How a tool result reaches the model: ``tool`` messages, or ``user`` messages naming the call.
ToolResultRole = Literal["tool", "user"]
#: How a call recovered from the text is written back: as a structured call only, or also as
#: the text it was (the assistant ``content`` keeps the markup the model wrote).
TextCallsInHistory = Literal["structured", "text"]


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
    #: documents ``null``; llama-cpp-python answers HTTP 500 to ``null`` (its request
    #: validation types assistant ``content`` as a string: ``Input should be a valid string``)
    #: and accepts ``""``. When set, a client's history is adapted the same way on the way in
    #: (:mod:`toolwire.adapters.openai_chat.adapt`): an assistant ``content`` that is ``null``,
    #: or missing next to tool calls, becomes this.
    empty_assistant_content: str | None = None
    #: How tool results are sent so that the model reads them. ``tool``: one ``role: tool``
    #: message per result, as OpenAI documents. ``user``: one ``role: user`` message per result,
    #: whose text names the tool and the call id and then quotes the result (a rejection: the
    #: judge's message); it also carries ``tool_call_id``, which the server ignores and the
    #: history check reads. llama-cpp-python's ``chatml-function-calling`` template renders a
    #: ``role: tool`` message as a bare ``<|im_start|>tool`` line with no content and no end
    #: marker (seen in the prompt the server prints with ``--verbose true``), so a result or a
    #: rejection sent that way never reaches the model. With ``user``, a client's ``role: tool``
    #: messages are rewritten the same way on the way in.
    tool_result_role: ToolResultRole = "tool"
    #: Tool calls stream only when ``tool_choice`` names a function. llama-cpp-python with
    #: ``--chat_format chatml-function-calling`` answers a streamed ``tool_choice: "auto"``
    #: request whose model picks a tool with HTTP 200 and an empty body (its handler raises
    #: "Automatic streaming tool choice is not supported" after the headers are sent), and
    #: refuses ``"required"``. The empty-body error then says so, and the healing asks a
    #: streamed ``"auto"`` request non-streamed and streams the judged answer to the client.
    streams_tool_calls_only_when_forced: bool = False
    #: Assistant-message keys the server refuses as ``null``; a client's history drops them
    #: on the way in (``null`` tells the model nothing). The openai SDK's streaming helper
    #: sends ``function_call: null`` back, and llama-cpp-python answers HTTP 500 (``Input
    #: should be a valid dictionary``: its validation types it as an object when present).
    null_keys_refused: tuple[str, ...] = ()
    #: ``text_calls="auto"`` reads calls the server left in the text: a local server whose tool
    #: parser does not match the model (a template without tools, another family's syntax, a
    #: parser bug) leaves them there (``docs/text-calls.md``). Hosted APIs parse their own.
    reads_text_calls: bool = False
    #: How a call recovered from the text is written back in the history (``next_messages``,
    #: the healing's retry). ``structured``: a structured call, rendered by a tool-aware
    #: template in the model's own syntax. ``text``: the assistant ``content`` is the text as
    #: the server sent it, markup included (``Turn.raw_text``), and the call stays in
    #: ``tool_calls`` so that its result pairs with it. llama-cpp-python's plain ``chatml``
    #: format (where calls arrive as text) renders only ``content``: a structured call would
    #: be an empty assistant turn (``tests/demo/test_text_calls_real_server.py`` renders it).
    text_calls_in_history: TextCallsInHistory = "structured"
    #: How the server is asked for a call to one tool whose arguments its engine keeps to the
    #: tool's schema: the constrained re-ask (:mod:`toolwire.adapters.openai_chat.constrain`;
    #: ``docs/healing.md`` names the version of each). ``None``: no way known, the re-ask is free.
    forcing: ChatForcing | None = None
    #: The server closes its connection after every streamed answer although its headers say
    #: ``Keep-Alive``: llama-server (b11434) returns false from its chunked content provider
    #: once it called ``sink.done()``, which cpp-httplib takes for a cancelled response and
    #: closes (``tools/server/server-http.cpp``; ``tests/llama_server/test_server_facts.py``).
    #: ``toolwire serve`` then never reuses a connection after a streamed answer from it
    #: (``toolwire.serve.upstream``), on every endpoint: it would be closed under the next
    #: request.
    closes_after_stream: bool = False


#: OpenAI's named function with ``strict: true`` (Structured Outputs, 2024-08-06).
_OPENAI_FORCING = ChatForcing(how="function", strict=True, engine=OPENAI_STRICT)

#: provider name -> profile, for every name that reads Chat Completions streams.
CHAT_PROFILES: dict[str, ServerProfile] = {
    "openai-chat": ServerProfile(gen_ai_name="openai", forcing=_OPENAI_FORCING),
    "openai": ServerProfile(gen_ai_name="openai", forcing=_OPENAI_FORCING),
    "azure-openai": ServerProfile(gen_ai_name="azure.ai.openai", forcing=_OPENAI_FORCING),
    "openai-compatible": ServerProfile(gen_ai_name="openai"),
    "llama-cpp": ServerProfile(
        gen_ai_name="llama.cpp",
        hides_length_finish=True,
        empty_assistant_content="",
        tool_result_role="user",
        streams_tool_calls_only_when_forced=True,
        null_keys_refused=("function_call",),
        reads_text_calls=True,
        text_calls_in_history="text",
        forcing=ChatForcing(how="function", engine=LLAMA_CPP_PYTHON),
    ),
    "llama-server": ServerProfile(
        gen_ai_name="llama.cpp",
        reads_text_calls=True,
        forcing=ChatForcing(how="call_json_schema", engine=LLAMA_CPP),
        closes_after_stream=True,
    ),
    "vllm": ServerProfile(
        gen_ai_name="vllm",
        reads_text_calls=True,
        forcing=ChatForcing(how="function", engine=STRUCTURED_OUTPUTS),
    ),
    # SGLang parses calls with the parser its ``--tool-call-parser`` names, as vLLM does
    # (``python/sglang/srt/function_call/``): a mismatch leaves them in the text.
    "sglang": ServerProfile(
        gen_ai_name="sglang",
        reads_text_calls=True,
        forcing=ChatForcing(how="function", engine=STRUCTURED_OUTPUTS),
    ),
    "lmstudio": ServerProfile(gen_ai_name="lmstudio", reads_text_calls=True),
    # Ollama's /v1 forces no tool; its response_format becomes ``format`` (v0.5.0), asked
    # without tools so that no tool parser reads the call object (``docs/healing.md``).
    "ollama-openai": ServerProfile(
        gen_ai_name="ollama",
        reads_text_calls=True,
        forcing=ChatForcing(how="call_response_format", engine=LLAMA_CPP, without_tools=True),
    ),
    "openrouter": ServerProfile(gen_ai_name="openrouter"),
    "mistral": ServerProfile(gen_ai_name="mistral_ai"),
    "xai": ServerProfile(gen_ai_name="x_ai"),
    "dashscope": ServerProfile(gen_ai_name="dashscope"),
    "deepseek": ServerProfile(gen_ai_name="deepseek"),
}
