"""DeepSeek V3 / R1 and V3.1: calls in a section of special tokens.

The tokens are spelled with fullwidth bars (U+FF5C) and U+2581 for the underscores, written
below as ``<|tool_calls_begin|>`` etc. V3 / R1:
``<|tool_call_begin|>function<|tool_sep|>NAME\\n```json\\n{...}\\n```<|tool_call_end|>``;
V3.1: ``<|tool_call_begin|>NAME<|tool_sep|>{...}<|tool_call_end|>`` (no type, no fence). A
section whose call tokens are missing (vLLM's ``malformed_missing_call_begin``) is not the
family's grammar and stays text; ``<|tool_output_begin|>`` is a result, never a call.
"""

from __future__ import annotations

import re

from ._names import TOOL_NAME_PATTERN
from ._reading import ReadContext, ReadResult, TextCallReader
from .kimi import read_token_section

__all__ = ["DeepSeekReader", "deepseek_token"]


def deepseek_token(name: str) -> str:
    """DeepSeek's spelling of a token: fullwidth bars, U+2581 for each underscore."""
    return "<\uff5c" + name.replace("_", "\u2581") + "\uff5c>"


_SEP = deepseek_token("tool_sep")
_NAME = TOOL_NAME_PATTERN
_FENCED = re.compile(r"\n?```(?:json)?[ \t]*\n(.*?)\n?```\s*", re.DOTALL)
_FENCE_START = re.compile(r"\n?```(?:json)?[ \t]*\n")


def _deepseek_call(inside: str, cut: bool) -> tuple[str, str] | None:
    split = inside.find(_SEP)
    if split < 0:
        return None
    head, rest = inside[:split], inside[split + len(_SEP) :]
    if head == "function":  # V3 / R1: the name, then the arguments in a fence
        name = _NAME.match(rest)
        if name is None:
            return None
        body = rest[name.end() :]
        fenced = _FENCED.fullmatch(body)
        if fenced is not None:
            return name.group(), fenced.group(1)
        if not cut:
            return None
        opened = _FENCE_START.match(body)
        return name.group(), body[opened.end() :] if opened is not None else ""
    name = _NAME.fullmatch(head)
    if name is None:
        return None
    return head, rest.strip()


class DeepSeekReader(TextCallReader):
    """A DeepSeek tool-call section, V3 or V3.1 calls."""

    family = "deepseek"
    openers = (deepseek_token("tool_calls_begin"),)
    #: deepseek-ai-DeepSeek-V3.1.jinja writes its end-of-sentence token right after the calls.
    end_tokens = (deepseek_token("end_of_sentence"),)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The whole section, every call in it."""
        return read_token_section(
            text,
            start,
            context,
            opener=deepseek_token("tool_calls_begin"),
            closer=deepseek_token("tool_calls_end"),
            call_opener=deepseek_token("tool_call_begin"),
            call_closer=deepseek_token("tool_call_end"),
            read_call=_deepseek_call,
        )
