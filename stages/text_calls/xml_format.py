"""What an XML-parameter tool-call format is, as data: :class:`XmlCallFormat`.

Many families write a call the same way and differ only in their markers::

    [BLOCK_OPEN]                       <tool_call> / <|DSML|tool_calls> / <minimax:tool_call>
      [CALL_PREFIX] INVOKE(NAME)       <function=NAME> / <invoke name="NAME">
        PARAMETER(KEY) [VALUE_OPEN]    <parameter=KEY> / <arg_key>KEY</arg_key><arg_value>
          VALUE PARAMETER_CLOSE        V</parameter>
        ...
      INVOKE_CLOSE [CALL_SUFFIX]       </function> / </invoke>
      ...
    [BLOCK_CLOSE] [END TOKENS]         </tool_call> / <|end▁of▁sentence|>

(DeepSeek's bars are fullwidth, U+FF5C.)

A format is one frozen value; one reader (``xml_reader.py``) reads every format, and the table
of formats is ``xml_families.py``. A family whose grammar is not this one (MiniMax M3's nested
XML values, harmony's channels) keeps a reader of its own.

The values are text. They are typed by the offered tool's schema (``_values.typed_value``),
except where the markup itself says what a value is: DeepSeek's ``string="true|false"`` and
Kimi K3's ``type="..."`` attributes (:attr:`XmlCallFormat.type_attribute`); a value the markup
calls JSON is decoded as JSON.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ._names import TOOL_NAME

__all__ = ["BARE_NAME", "IDENTIFIER", "QUOTED_NAME", "Trim", "XmlCallFormat", "XmlTag"]

#: A name written right after ``=``: ``<function=get_weather>`` (Qwen's parser takes a name up
#: to ``>``; toolwire takes an identifier, dotted or dashed, and nothing else).
IDENTIFIER = rf"({TOOL_NAME})"  # the shared name grammar (_names.py)
#: A name inside double quotes: ``name="get_weather"`` (anything but a quote, a tag or a line end).
QUOTED_NAME = r'([^"<>\n]+)'
#: A name between two tags, blanks around it allowed: ``<tool_call>get_weather<tool_sep>``.
BARE_NAME = r"\s*([^\s<>]+)\s*"

#: What of a value's own blanks belong to the markup, taken off before the value is read:
#: ``line``: one line feed after the opening tag and one before the closing tag (Qwen's parser);
#: ``lines``: every line feed at either end (SGLang's MiniMax M2 parser); ``blanks``: all
#: whitespace at either end; ``none``: the value is exactly what stands between the tags.
Trim = Literal["line", "lines", "blanks", "none"]


class XmlTag(msgspec.Struct, frozen=True, gc=False):
    """An opening tag that names something: ``open`` NAME ``quote`` [attributes] ``close``.

    ``<function=NAME>`` is ``XmlTag("<function=", ">")``; ``<invoke name="NAME">`` is
    ``XmlTag('<invoke name="', ">", quote='"')``.
    """

    open: str
    close: str
    #: What ends the name before ``close`` (``"`` for ``name="..."``); empty for a bare name.
    quote: str = ""
    #: ``key="value"`` attributes may follow the name, blank-separated (DSML's ``string=``,
    #: Kimi K3's ``index=`` and ``type=``); blanks are then allowed before ``close``.
    attributes: bool = False
    #: The name as a regular expression with one group (:data:`IDENTIFIER`, ...).
    name: str = IDENTIFIER


class XmlCallFormat(msgspec.Struct, frozen=True, gc=False):
    """One family's XML-parameter call syntax. Every field but the first five has a default
    that means "this family has no such thing"."""

    #: The family's name, as ``text_calls=[...]`` names it.
    family: str
    #: The tag that opens a call and names its tool.
    invoke: XmlTag
    #: The tag that closes a call.
    invoke_close: str
    #: The tag that opens a parameter and names its key.
    parameter: XmlTag
    #: The tag that closes a parameter.
    parameter_close: str
    #: The wrappers a block of calls may stand in, each ``(open, close)``; a block holds one
    #: call or several. Empty: each call stands alone (MiniCPM5).
    blocks: tuple[tuple[str, str], ...] = ()
    #: A call also counts without its wrapper (Qwen3-Coder drops ``<tool_call>``, ollama#16686).
    block_optional: bool = False
    #: Qwen's parser's leniency: a wrapper holds one call, its close may be missing after the
    #: call's close, and the call's close may be missing before the wrapper's.
    lenient_closes: bool = False
    #: Tags that also end a value whose closing tag is missing (Qwen: the next ``<parameter=``,
    #: ``</function>`` or ``</tool_call>``, vllm#21571); empty: a value ends at its own close.
    value_ends: tuple[str, ...] = ()
    #: Markers around each call inside the block (Step-3's ``<|tool_call_begin|>function
    #: <|tool_sep|>`` ... ``<|tool_call_end|>``); blanks are allowed around them.
    call_prefix: str = ""
    call_suffix: str = ""
    #: A tag between a parameter's key and its value (``<arg_value>``), blanks allowed before.
    value_open: str = ""
    #: What of a value's blanks belong to the markup.
    trim: Trim = "none"
    #: A value may be ``<![CDATA[...]]>``: its inside is the value, exactly (MiniCPM5).
    cdata: bool = False
    #: The parameter attribute that says how its value is written: ``string`` (DeepSeek DSML),
    #: ``type`` (Kimi K3); empty: values are typed by the tool's schema.
    type_attribute: str = ""
    #: The values of ``type_attribute`` that mean "the value is text" (``true``, ``string``);
    #: any other value means "the value is JSON".
    text_types: tuple[str, ...] = ()
    #: The family's end-of-turn tokens (``<|end▁of▁sentence|>``, ``<|end_of_msg|>``): a server
    #: that does not stop on one leaves it as text; right after the block it is the block's
    #: markup (the reader's ``end_tokens``, taken in by the scanner).
    end_tokens: tuple[str, ...] = ()
    #: The block counts only when nothing but blanks and other blocks follow it (every
    #: server's grammar for these families ends the reply with the calls).
    tail_only: bool = True

    @property
    def openers(self) -> tuple[str, ...]:
        """Where the family's markup may start: its wrappers, or its call tag when a call may
        stand alone."""
        openers = [block_open for block_open, _ in self.blocks]
        if self.block_optional or not self.blocks:
            openers.append(self.call_prefix or self.invoke.open)
        return tuple(dict.fromkeys(openers))
