"""What the model reads: the prompt llama-cpp-python renders from the history toolwire writes.

The server's own ``chatml-function-calling`` handler is called with a stand-in for the model
that keeps the prompt it is given (the same code path as the server's; its ``--verbose true``
log prints token counts, not the prompt). With ``role: tool`` the result is lost: the template
writes a bare ``<|im_start|>tool`` line. With the ``llama-cpp`` profile the model reads which
call was rejected and why.
"""

from __future__ import annotations

from typing import Any

import anyio
from optional_parts import optional_module

import toolwire
from toolwire.cli.demo.sandbox import TOOLS
from toolwire.cli.demo.tasks import SYSTEM_PROMPT
from toolwire.recordings import read_bundled

#: The [local] extra's: a skip in the quick tier without it, a failure in the full suite.
llama_chat_format = optional_module("llama_cpp.llama_chat_format")


class _Rendered(Exception):
    pass


class PromptCapture:
    """Stands for ``llama_cpp.Llama``: keeps the prompt, generates nothing."""

    verbose = False
    prompt = ""

    def create_completion(self, prompt: str, **settings: Any) -> Any:
        self.prompt = prompt
        raise _Rendered


def rendered_prompt(
    messages: list[dict[str, Any]], tool: str, tools: list[dict[str, Any]] = TOOLS
) -> str:
    """The prompt the handler renders for a request naming ``tool`` (``"auto"``: none).

    ``bench/agent_margins.py`` renders the prompts of real agents' requests with it.
    """
    capture = PromptCapture()
    choice: Any = "auto" if tool == "auto" else {"type": "function", "function": {"name": tool}}
    try:
        llama_chat_format.chatml_function_calling(
            llama=capture,  # type: ignore[arg-type]
            messages=messages,  # type: ignore[arg-type]
            tools=tools,  # type: ignore[arg-type]
            tool_choice=choice,
            stream=tool != "auto",
        )
    except _Rendered:
        return capture.prompt
    raise AssertionError("the handler never asked for a completion")


def history_after_cut_write(provider: str) -> tuple[list[dict[str, Any]], str]:
    """The history after the real cut ``write`` call, as ``provider``'s history writes it."""
    pipeline = toolwire.Pipeline(provider, tools=TOOLS, max_tokens=24)
    turn = anyio.run(pipeline.collect, read_bundled("llama_cpp_write_cut_at_max_tokens"))
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.message
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "Write a Python hello world program to the file hello.py."},
    ]
    messages += pipeline.next_messages(turn, toolwire.answer_every_call(turn, []))
    messages[2]["content"] = ""  # what llama-cpp-python accepts (null is an HTTP 500)
    return messages, call.verdict.message


def test_a_tool_message_never_reaches_the_model() -> None:
    messages, _message = history_after_cut_write("openai-compatible")
    assert messages[3]["role"] == "tool"
    prompt = rendered_prompt(messages, "write")
    assert "<|im_start|>tool\n<|im_start|>assistant\n" in prompt  # an empty, unclosed turn
    assert "cut off" not in prompt


def test_the_llama_cpp_profile_makes_the_model_read_the_rejection() -> None:
    messages, message = history_after_cut_write("llama-cpp")
    assert messages[3]["role"] == "user"
    prompt = rendered_prompt(messages, "write")
    first_line = message.splitlines()[0]
    assert "<|im_start|>user\nResult of tool call `write` (id " in prompt
    assert first_line in prompt  # the rejection, word for word (it has no quotes to escape)
    assert "cut off at the output-token limit" in prompt
    assert "<|im_start|>tool" not in prompt
    # The template HTML-escapes message text: quotes reach the model as &#34;.
    assert "&#34;path&#34;" in prompt
    assert prompt.endswith("<|im_start|>assistant\nfunctions.write:\n")


def test_the_tools_are_listed_only_in_a_system_message() -> None:
    messages, _ = history_after_cut_write("llama-cpp")
    with_system = rendered_prompt(messages, "write")
    without_system = rendered_prompt(messages[1:], "write")
    assert "functions.edit:" in with_system
    assert "functions.edit:" not in without_system
