"""Qwen3-Coder (and Qwen3.5) XML calls::

    <tool_call>
    <function=NAME>
    <parameter=KEY>
    VALUE
    </parameter>
    </function>
    </tool_call>

Values are text, typed by the tool's schema (``_values``). As Qwen's reference parser does, one
line feed after ``<parameter=KEY>`` and one before the closing tag belong to the markup, and a
parameter left open is closed by the next ``<parameter=``, ``</function>`` or ``</tool_call>``
(vllm#21571, Ollama's qwen3.5 fixture). The ``<tool_call>`` wrapper may be missing
(ollama#16686). ``<function=`` also opens prose about the format, so a block counts only at
the tail of the reply. A name inside ``<parameter=...>`` where ``<function=`` belongs
(ds4#1050) is no call.
"""

from __future__ import annotations

import re

from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    TextCall,
    TextCallReader,
    _NeedMore,
    expect,
    skip_blanks,
)
from ._values import arguments_json

__all__ = ["QwenXmlReader"]

_FUNCTION = re.compile(r"<function=([A-Za-z_][\w.\-]*)>")
_PARAMETER = re.compile(r"<parameter=([A-Za-z_][\w.\-]*)>")
# What ends a parameter's value: its own closing tag, or the next tag of the call.
_VALUE_END = re.compile(r"</parameter>|<parameter=|</function>|</tool_call>")
_PARTIAL_PARAMETER = re.compile(r"<parameter=[\w.\-]*")
_CLOSERS = ("<parameter=", "</function>", "</tool_call>")


def _may_grow(rest: str) -> bool:
    """``rest`` (the text's end) may still become a tag of the call."""
    if len(rest) >= 80:
        return False
    return any(closer.startswith(rest) for closer in _CLOSERS) or bool(
        _PARTIAL_PARAMETER.fullmatch(rest)
    )


def _strip_value(value: str) -> str:
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


class QwenXmlReader(TextCallReader):
    """``<function=NAME>``, ``<parameter=K>V</parameter>``..., ``</function>``, maybe wrapped."""

    family = "qwen3-coder"
    openers = ("<tool_call>", "<function=")

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """One call, with or without its ``<tool_call>`` wrapper."""
        final = context.final
        wrapped = text.startswith("<tool_call>", start)
        index = skip_blanks(text, start + len("<tool_call>")) if wrapped else start
        function = _FUNCTION.match(text, index)
        if function is None:
            rest = text[index : index + 64]
            if (
                not final
                and ">" not in rest
                and ("<function=".startswith(rest[:10]) or rest.startswith("<function="))
            ):
                return NEED_MORE
            return None
        name = function.group(1)
        if not context.offered(name):
            return None
        properties = context.property_schemas(name)
        pairs: list[tuple[str, str]] = []
        index = skip_blanks(text, function.end())
        while True:
            parameter = _PARAMETER.match(text, index)
            if parameter is None:
                break
            value_end = _VALUE_END.search(text, parameter.end())
            if value_end is None:
                if not final:
                    return NEED_MORE
                return self._cut(start, text, name, pairs, properties)
            pairs.append(
                (parameter.group(1), _strip_value(text[parameter.end() : value_end.start()]))
            )
            index = value_end.end() if value_end.group() == "</parameter>" else value_end.start()
            index = skip_blanks(text, index)
        if not final and _may_grow(text[index : index + 80]):
            return NEED_MORE
        end = index
        closed_function = text.startswith("</function>", index)
        if closed_function:
            end = skip_blanks(text, index + len("</function>"))
        closing = expect(text, end, "</tool_call>", final)
        if isinstance(closing, _NeedMore):
            return closing
        if closing:
            end += len("</tool_call>")
        elif closed_function:
            end = index + len("</function>")
        elif index >= len(text) or _may_grow(text[index : index + 80]):
            # The text ended there, or inside a tag of the call (``<function=task>\n<``).
            return self._cut(start, text, name, pairs, properties)
        else:
            return None  # something else inside the call: not this grammar
        arguments = arguments_json(pairs, properties)
        if arguments is None:
            return None
        return Found(start, end, (TextCall(name, arguments),), tail_only=True)

    def _cut(
        self, start: int, text: str, name: str, pairs: list[tuple[str, str]], properties: object
    ) -> Found:
        # The text ended inside the call: whatever was read is not the call the model meant.
        call = TextCall(name, "", cut=True)
        return Found(start, len(text), (call,), tail_only=True, closed=False)
