"""The reasoning wrappers models write around their thinking: a call inside one is a draft.

A model that thinks before it answers drafts calls in its reasoning (verl#4757: the draft and the
real call after ``</think>`` are both ``<tool_call>`` blocks; issue 28: a Magistral reply
``[THINK]... [TOOL_CALLS]f[ARGS]{...} ...[/THINK][TOOL_CALLS]f[ARGS]{...}`` ran the tool twice).
A draft never runs. When the server splits reasoning off (``reasoning_content``, Ollama's
``thinking``), the adapters emit it as ``ReasoningDelta`` and the text-call stage never reads it;
when the server leaves it in the text, the scanner (``_scanner.py``) steps over every wrapper in
:data:`REASONING_WRAPPERS`, whatever families are read: a Qwen reply read with
``text_calls=["hermes"]`` still thinks in ``<think>``.

Each wrapper is data, with where it was learnt (chat templates in llama.cpp's
``models/templates/``, the servers' reasoning parsers: llama.cpp ``common/parsers/*.cpp``
``thinking_start_tag`` / ``thinking_end_tags``, vLLM ``vllm/reasoning/*``). What a wrapper says:

- **openers / closers**: the reasoning runs from an opener to the first closer. One opened and
  never closed (the output was cut, or the model never closed it) runs to the end: all of it is
  reasoning.
- **implicit_ends**: markers at which the servers end the reasoning of a model that went
  straight from thinking to its call without the closer (llama.cpp ``thinking_end_tags`` for
  Qwen3.5 / Ling 3 / DeepSeek V3.2, vLLM's Kimi K2 and Qwen3 parsers). toolwire ends it there
  too, more strictly: a call after an implicit end counts only at the tail of the reply (nothing
  but blanks and other calls after it), and a closer that comes later makes it a draft after all.
- **opened_by_prompt**: many templates open the reasoning in the generation prompt (DeepSeek R1,
  Qwen3 thinking, MiniMax M2, Kimi K2 Thinking, Cohere, Apriel), so the output holds only the
  closer. A closer with no opener before it therefore means that everything before it was
  reasoning: the calls read before it are drafts, and the reply starts again after it. False
  for closers that end other things too (harmony's ``<|end|>`` ends every message).
- **not_after**: a pattern that, matching the text just before an opener, makes it no opener
  (harmony: ``to=functions.f<|channel|>analysis<|message|>`` is a call addressed on the
  analysis channel, not reasoning). Only the text the stage still holds is seen.

Left out: Granite 3.2's plain-English markers (``Here is my thought process:`` ...
``Here is my response:``, vLLM ``granite_reasoning_parser.py``): a capital ``H`` would take
every reply off the stage's fast path, and the words are ordinary prose.

:class:`ReasoningTable` compiles the wrappers once for the scanner.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from ._reading import grows_into

__all__ = ["REASONING", "REASONING_WRAPPERS", "ReasoningEnd", "ReasoningTable", "ReasoningWrapper"]


class ReasoningWrapper(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One spelling of reasoning in the text, and who writes it (see the module docstring)."""

    #: Where the reasoning starts (empty: only ever opened by the generation prompt).
    openers: tuple[str, ...]
    #: Where it ends; the closer belongs to the reasoning.
    closers: tuple[str, ...]
    #: Where the servers end it without a closer; the marker belongs to what follows.
    implicit_ends: tuple[str, ...] = ()
    #: A closer with no opener before it closes reasoning the prompt opened.
    opened_by_prompt: bool = True
    #: A regular expression: an opener right after text it matches opens nothing.
    not_after: str = ""
    #: The models that write it.
    models: str = ""
    #: Where it was learnt.
    source: str = ""


#: Every wrapper, read in every reply whatever families are chosen.
REASONING_WRAPPERS: tuple[ReasoningWrapper, ...] = (
    ReasoningWrapper(
        openers=("<think>",),
        closers=("</think>",),
        implicit_ends=(
            "<tool_call>",
            "<|tool_calls_section_begin|>",
            "<|tool_call_begin|>",
            "<\uff5cDSML\uff5cfunction_calls>",
            "<\uff5cDSML\uff5ctool_calls>",
        ),
        models=(
            "Qwen3 / 3.5, QwQ, DeepSeek R1 / V3.1 / V3.2 / V4, GLM-4.5-4.7, Kimi K2 Thinking, "
            "MiniMax M2, Nemotron Nano v2 / 3, SmolLM3, Granite 3.3, MiniCPM5, LFM2.5, Ling 3, "
            "Step 3.5, Hunyuan A13B, Magistral 2506"
        ),
        source=(
            "llama.cpp models/templates/ (Qwen-Qwen3-0.6B, deepseek-ai-DeepSeek-*, GLM-4.6, "
            "Kimi-K2-Thinking, MiniMax-M2, NVIDIA-Nemotron-*, HuggingFaceTB-SmolLM3-3B, "
            "ibm-granite-granite-3.3-2B-Instruct, openbmb-MiniCPM5-1B, LFM2.5-8B-A1B); implicit "
            "ends: llama.cpp common/parsers/qwen3-coder.cpp and ling3.cpp (<tool_call>), "
            "kimi-k2.cpp and vLLM vllm/reasoning/kimi_k2_reasoning_parser.py (Kimi's section "
            "tokens), deepseek.cpp (DSML function_calls / tool_calls)"
        ),
    ),
    ReasoningWrapper(
        openers=("[THINK]",),
        closers=("[/THINK]",),
        models="Ministral 3 Reasoning, Magistral Small / Medium 1.1+",
        source=(
            "llama.cpp models/templates/mistralai-Ministral-3-14B-Reasoning-2512.jinja, "
            "common/parsers/ministral3.cpp; issue 28 (a draft in [THINK] ran twice)"
        ),
    ),
    ReasoningWrapper(
        openers=("<seed:think>",),
        closers=("</seed:think>",),
        models="Seed-OSS",
        source="llama.cpp models/templates/ByteDance-Seed-OSS.jinja",
    ),
    ReasoningWrapper(
        openers=("<|START_THINKING|>",),
        closers=("<|END_THINKING|>",),
        models="Command R7B, Command A Reasoning",
        source=(
            "llama.cpp models/templates/CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja, "
            "Cohere2MoE.jinja, common/parsers/cohere2moe.cpp (the prompt opens it); vLLM "
            "vllm/reasoning/cohere_command_reasoning_parser.py"
        ),
    ),
    ReasoningWrapper(
        openers=("<mm:think>",),
        closers=("</mm:think>",),
        models="MiniMax M3",
        source="llama.cpp models/templates/MiniMax-M3.jinja, common/parsers/minimax-m3.cpp",
    ),
    ReasoningWrapper(
        openers=("<|open|>think<|sep|>",),
        closers=("<|close|>think<|sep|>",),
        implicit_ends=("<|open|>response<|sep|>",),
        models="Kimi K3",
        source="llama.cpp models/templates/Kimi-K3.jinja, common/parsers/kimi-k3.cpp",
    ),
    ReasoningWrapper(
        openers=("\u25c1think\u25b7",),
        closers=("\u25c1/think\u25b7",),
        models="Kimi-VL Thinking, Kimi k1.5",
        source="vLLM vllm/reasoning/kimi_reasoning_parser.py (◁think▷ ... ◁/think▷)",
    ),
    ReasoningWrapper(
        openers=("<|channel>thought",),
        closers=("<channel|>",),
        models="Gemma 4",
        source="llama.cpp models/templates/google-gemma-4-31B-it.jinja, common/parsers/gemma4.cpp",
    ),
    ReasoningWrapper(
        # LLM-jp's tokenizer writes a blank after every special token (llm-jp-harmony.cpp).
        openers=("<|channel|>analysis<|message|>", "<|channel|> analysis<|message|>"),
        closers=("<|end|>",),
        opened_by_prompt=False,
        not_after=r"to=[^\s<]+\s*\Z",
        models="gpt-oss (harmony), llm-jp 4.1 thinking",
        source=(
            "llama.cpp models/templates/openai-gpt-oss-120b.jinja, common/parsers/gpt-oss.cpp "
            "(analysis content runs until <|end|>), llm-jp-harmony.cpp"
        ),
    ),
    ReasoningWrapper(
        openers=("<|think|>",),
        closers=("<|end|>",),
        opened_by_prompt=False,
        models="Solar Open",
        source="llama.cpp models/templates/upstage-Solar-Open-100B.jinja",
    ),
    ReasoningWrapper(
        openers=("<|think:start|>",),
        closers=("<|think:end|>",),
        implicit_ends=("<|tool_call:start|>",),
        models="Solar Open 2",
        source="vLLM vllm/reasoning/solar_open2_reasoning_parser.py (the prompt opens it)",
    ),
    ReasoningWrapper(
        openers=("<think:opensource>",),
        closers=("</think:opensource>",),
        models="Hunyuan (Hy3)",
        source="llama.cpp models/templates/tencent-Hy3.jinja (think tokens with the HYTK suffix)",
    ),
    ReasoningWrapper(
        openers=("<thinking>",),
        closers=("</thinking>",),
        models="Apriel 1.5",
        source="llama.cpp models/templates/unsloth-Apriel-1.5.jinja",
    ),
    ReasoningWrapper(
        openers=(),
        closers=("[BEGIN FINAL RESPONSE]",),
        models="Apriel 1.5 / 1.6 Thinker (the prompt ends with 'Here are my reasoning steps:')",
        source=(
            "llama.cpp models/templates/Apriel-1.6-15b-Thinker-fixed.jinja, "
            "common/chat-auto-parser.h (reasoning end '[BEGIN FINAL RESPONSE]')"
        ),
    ),
    ReasoningWrapper(
        openers=("<ifm|think>", "<ifm|think_fast>", "<ifm|think_faster>"),
        closers=("</ifm|think>", "</ifm|think_fast>", "</ifm|think_faster>"),
        implicit_ends=("<ifm|tool_calls>",),
        models="K2 Horizon (one pair per reasoning effort: high, medium, low)",
        source=(
            "vLLM vllm/reasoning/k2_horizon_reasoning_parser.py (a DeepSeek R1 parser: the "
            "prompt may open it; <ifm|tool_calls> ends it), SGLang k2_v3_detector.py"
        ),
    ),
    ReasoningWrapper(
        openers=("<|plamo:begin_think:plamo|>",),
        closers=("<|plamo:end_think:plamo|>",),
        implicit_ends=("<|plamo:begin_tool_requests:plamo|>",),
        models="PLaMo 3",
        source=(
            "vLLM vllm/parser/plamo3.py (thinking starts in the reasoning state; the tool "
            "requests' opener ends it)"
        ),
    ),
    ReasoningWrapper(
        openers=("<|content_thinking|>",),
        closers=("<|end_message|>",),
        opened_by_prompt=False,
        models="Inkling",
        source="vLLM vllm/parser/inkling.py (<|end_message|> ends every kind of block)",
    ),
    ReasoningWrapper(
        # The reply's first message (" to=self<|message|>", after the prompt's
        # <|start|>assistant) has no marker of its own that starts with "<": muse.py reads no
        # block there, and a header opener starting with "t" would hold every reply.
        openers=("<|start|>assistant to=self<|message|>",),
        closers=("<|eom|>", "<|eot|>"),
        opened_by_prompt=False,
        models="Muse Glimmer, Muse Spark",
        source=(
            "llama.cpp models/templates/muse-glimmer.jinja, common/parsers/muse-glimmer.cpp; "
            "vLLM vllm/tool_parsers/muse_tool_parser.py (to=self is reasoning)"
        ),
    ),
)


class ReasoningEnd(msgspec.Struct, frozen=True, gc=False):
    """Where the open reasoning ends: ``[start, end)`` is its end marker; ``implicit`` when the
    marker is an implicit end (it belongs to what follows: the text resumes at ``start``)."""

    start: int
    end: int
    implicit: bool


class ReasoningTable:
    """The wrappers compiled for the scanner: which tokens open reasoning, which closers close
    reasoning the prompt opened, and, per wrapper, where its reasoning ends."""

    __slots__ = (
        "_ends",
        "_guards",
        "_implicit",
        "_longest_opener",
        "_markers",
        "closers",
        "openers",
        "tokens",
    )

    def __init__(self, wrappers: Sequence[ReasoningWrapper]) -> None:
        #: Opener -> the index of its wrapper.
        self.openers = {
            opener: index for index, wrapper in enumerate(wrappers) for opener in wrapper.openers
        }
        #: Closers that, with no opener before them, close reasoning the prompt opened.
        self.closers = frozenset(
            closer for wrapper in wrappers if wrapper.opened_by_prompt for closer in wrapper.closers
        )
        #: Every token the scanner must find in the text.
        self.tokens = frozenset({*self.openers, *self.closers})
        self._longest_opener = max(map(len, self.openers), default=0)
        self._guards = tuple(
            re.compile(wrapper.not_after) if wrapper.not_after else None for wrapper in wrappers
        )
        self._implicit = tuple(frozenset(wrapper.implicit_ends) for wrapper in wrappers)
        self._markers = tuple((*wrapper.closers, *wrapper.implicit_ends) for wrapper in wrappers)
        self._ends = tuple(
            re.compile("|".join(re.escape(m) for m in sorted(ends, key=len, reverse=True)))
            for ends in self._markers
        )

    def opens(self, token: str, text: str, at: int) -> int | None:
        """The wrapper ``token`` at ``text[at]`` opens, or ``None`` (not an opener, or its
        ``not_after`` matches the held text just before it)."""
        wrapper = self.openers.get(token)
        if wrapper is None:
            return None
        guard = self._guards[wrapper]
        if guard is not None and guard.search(text, max(0, at - 256), at) is not None:
            return None
        return wrapper

    def may_open(self, text: str, at: int) -> bool:
        """Whether ``text[at:]`` (the end of the text so far) may still grow into an opener."""
        if len(text) - at >= self._longest_opener:
            return False
        return grows_into(text[at:], self.openers)

    def end(self, wrapper: int, text: str, position: int, final: bool) -> ReasoningEnd | int:
        """Where the reasoning of ``wrapper``, open at ``position``, ends; when it does not end
        in ``text``, how far ``text`` is reasoning for certain (the rest may start its end)."""
        found = self._ends[wrapper].search(text, position)
        if found is not None:
            implicit = found.group() in self._implicit[wrapper]
            return ReasoningEnd(found.start(), found.end(), implicit)
        length = len(text)
        if final:
            return length
        markers = self._markers[wrapper]
        longest = max(map(len, markers))
        for index in range(max(position, length - longest + 1), length):
            tail = text[index:]
            if any(marker.startswith(tail) for marker in markers):
                return index
        return length


#: The built-in wrappers, compiled.
REASONING = ReasoningTable(REASONING_WRAPPERS)
