"""Every XML-parameter family toolwire reads, as data: one :class:`XmlCallFormat` a family.

Each row says where its syntax was learned: the model's chat template (llama.cpp keeps real
ones in ``models/templates/``), the servers' parser source (llama.cpp ``common/parsers/``,
vLLM ``vllm/tool_parsers/``, SGLang ``python/sglang/srt/function_call/``). Where the servers
disagree on a detail, the row says which reading toolwire takes. ``docs/text-calls.md`` has the
table of families, the servers that parse each, and how its end arrives on the stream.
"""

from __future__ import annotations

from .deepseek import deepseek_token
from .xml_format import BARE_NAME, QUOTED_NAME, XmlCallFormat, XmlTag

__all__ = [
    "DEEPSEEK_DSML",
    "DEEPSEEK_DSML_DOUBLED",
    "DEEPSEEK_V41",
    "DEEPSEEK_V41_DOUBLED",
    "DOTS",
    "GIGACHAT35",
    "HUNYUAN_HY3",
    "HUNYUAN_HY3_OPENSOURCE",
    "HY_V4",
    "IQUEST",
    "K2_HORIZON",
    "KIMI_K3",
    "MINICPM5",
    "MINIMAX_M2",
    "QWEN3_CODER",
    "SEED_OSS",
    "SOLAR_OPEN2",
    "STEP3",
    "XML_FAMILIES",
    "ZAYA",
]

#: The fullwidth bar (U+FF5C) that DeepSeek's, Step-3's and Hunyuan's tokens are spelled with;
#: the comments below write it ``|``.
_BAR = "\uff5c"
_DSML = f"{_BAR}DSML{_BAR}"
_DSML_DOUBLED = f"{_BAR}{_BAR}DSML{_BAR}{_BAR}"


def _fullwidth(name: str) -> str:
    """``<|name|>`` with fullwidth bars, as Step-3 and Hunyuan spell their tokens."""
    return f"<{_BAR}{name}{_BAR}>"


#: Qwen3-Coder, Qwen3.5, Nemotron 3 Nano, StepFun-3.5-Flash (llama.cpp's templates
#: ``Qwen3-Coder``, ``Qwen3.5-4B``, ``NVIDIA-Nemotron-3-Nano-30B-A3B-BF16``,
#: ``StepFun3.5-Flash``; ``common/parsers/qwen3-coder.cpp`` serves all four)::
#:
#:     <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>
#:
#: As Qwen's reference parser does, one line feed after ``<parameter=KEY>`` and one before the
#: closing tag belong to the markup, and a parameter left open is closed by the next
#: ``<parameter=``, ``</function>`` or ``</tool_call>`` (vllm#21571, Ollama's qwen3.5 fixture).
#: The ``<tool_call>`` wrapper may be missing (ollama#16686; llama.cpp also accepts a call
#: opened by ``<function=NAME>``). ``<function=`` also opens prose about the format, so a block
#: counts only at the tail of the reply. A name inside ``<parameter=...>`` where ``<function=``
#: belongs (ds4#1050) is no call.
QWEN3_CODER = XmlCallFormat(
    family="qwen3-coder",
    blocks=(("<tool_call>", "</tool_call>"),),
    block_optional=True,
    lenient_closes=True,
    invoke=XmlTag("<function=", ">"),
    invoke_close="</function>",
    parameter=XmlTag("<parameter=", ">"),
    parameter_close="</parameter>",
    value_ends=("<parameter=", "</function>", "</tool_call>"),
    trim="line",
)

#: ByteDance Seed-OSS (llama.cpp ``ByteDance-Seed-OSS.jinja``; vLLM ``seed_oss_tool_parser.py``,
#: "adapted from qwen3coder"): Qwen3-Coder's calls in Seed's own wrapper, one call a block, and
#: ``<seed:eos>`` to end the turn::
#:
#:     <seed:tool_call>\n<function=NAME>\n<parameter=KEY>VALUE</parameter>\n</function>
#:     </seed:tool_call>
#:
#: A ``<function=`` without the wrapper is Qwen3-Coder's row.
SEED_OSS = XmlCallFormat(
    family="seed-oss",
    blocks=(("<seed:tool_call>", "</seed:tool_call>"),),
    invoke=XmlTag("<function=", ">"),
    invoke_close="</function>",
    parameter=XmlTag("<parameter=", ">"),
    parameter_close="</parameter>",
    value_ends=("<parameter=", "</function>", "</seed:tool_call>"),
    trim="line",
    end_tokens=("<seed:eos>",),
)

#: DeepSeek V3.2 and V4 "DSML" (templates ``deepseek-ai-DeepSeek-V3.2``, ``-V4``,
#: ``-V4-Flash-0731``; llama.cpp ``common/parsers/deepseek.cpp``, vLLM
#: ``deepseekv32_tool_parser.py`` and ``deepseekv4_tool_parser.py``). V3.2 wraps the calls in
#: ``function_calls``, V4 in ``tool_calls``; ``|`` is U+FF5C::
#:
#:     <|DSML|function_calls>
#:     <|DSML|invoke name="NAME">
#:     <|DSML|parameter name="KEY" string="true">text</|DSML|parameter>
#:     <|DSML|parameter name="KEY2" string="false">{"json": 1}</|DSML|parameter>
#:     </|DSML|invoke>
#:     </|DSML|function_calls><|end▁of▁sentence|>
#:
#: ``string="true"`` says the value is the text as written; ``string="false"`` says it is JSON
#: ("lists and objects should use JSON format", the template's tool prompt).
def _dsml(marker: str, calls: tuple[str, ...]) -> XmlCallFormat:
    """DeepSeek's DSML spelled with ``marker`` before each tag name, the calls in a ``calls``
    block: every DSML row differs from the others only in these."""
    return XmlCallFormat(
        family="deepseek-dsml",
        blocks=tuple((f"<{marker}{name}>", f"</{marker}{name}>") for name in calls),
        invoke=XmlTag(
            f'<{marker}invoke name="', ">", quote='"', attributes=True, name=QUOTED_NAME
        ),
        invoke_close=f"</{marker}invoke>",
        parameter=XmlTag(
            f'<{marker}parameter name="', ">", quote='"', attributes=True, name=QUOTED_NAME
        ),
        parameter_close=f"</{marker}parameter>",
        type_attribute="string",
        text_types=("true",),
        end_tokens=(deepseek_token("end_of_sentence"),),
    )


DEEPSEEK_DSML = _dsml(_DSML, ("function_calls", "tool_calls"))

#: The same DSML with each bar doubled (``<||DSML||tool_calls>``, ``</||DSML||parameter>``):
#: how DeepSeek V4 models' leaked calls read in real outputs, which no server parses
#: (opencrabs#398, lsdefine/GenericAgent#804: "high-frequency real leak forms ... the double
#: fullwidth bar form", counted among 911 leaks; command-code#909 for V4.1's spaced form
#: below). The markers stay DeepSeek's own, so nothing else reads as one.
DEEPSEEK_DSML_DOUBLED = _dsml(_DSML_DOUBLED, ("function_calls", "tool_calls"))

#: MiniMax M2 (template ``MiniMax-M2.jinja``; vLLM ``minimax_m2_tool_parser.py``, SGLang
#: ``minimax_m2.py``)::
#:
#:     <minimax:tool_call>
#:     <invoke name="NAME">
#:     <parameter name="KEY">VALUE</parameter>
#:     </invoke>
#:     </minimax:tool_call>[e~[
#:
#: Line feeds at either end of a value are the markup's (SGLang strips them; vLLM strips every
#: blank, which would change a string's own spaces).
MINIMAX_M2 = XmlCallFormat(
    family="minimax-m2",
    blocks=(("<minimax:tool_call>", "</minimax:tool_call>"),),
    invoke=XmlTag('<invoke name="', ">", quote='"', name=QUOTED_NAME),
    invoke_close="</invoke>",
    parameter=XmlTag('<parameter name="', ">", quote='"', name=QUOTED_NAME),
    parameter_close="</parameter>",
    trim="lines",
    end_tokens=("[e~[",),
)

#: Kimi K3 "XTML" (template ``Kimi-K3.jinja``; llama.cpp ``common/parsers/kimi-k3.cpp``, vLLM
#: ``kimi_k3_tool_parser.py``). Not Kimi K2's token sections (``kimi.py``): the tokens
#: ``<|open|>``, ``<|close|>``, ``<|sep|>`` build tags, and the calls follow the response::
#:
#:     <|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|>
#:     <|open|>argument key="KEY" type="string"<|sep|>text<|close|>argument<|sep|>
#:     <|open|>argument key="KEY2" type="object"<|sep|>{"a":1}<|close|>argument<|sep|>
#:     <|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>
#:
#: ``type="string"`` says the value is the text as written; any other type says it is JSON
#: (the template writes it with ``tojson``). A name or key holding ``&`` or ``"`` (the template
#: escapes them as entities) is not read: no call. A call whose arguments are one
#: ``<|open|>json ...`` element (the template's form for arguments given as a string) is not
#: read either: neither server reads it.
KIMI_K3 = XmlCallFormat(
    family="kimi-k3",
    blocks=(("<|open|>tools<|sep|>", "<|close|>tools<|sep|>"),),
    invoke=XmlTag('<|open|>call tool="', "<|sep|>", quote='"', attributes=True, name=QUOTED_NAME),
    invoke_close="<|close|>call<|sep|>",
    parameter=XmlTag(
        '<|open|>argument key="', "<|sep|>", quote='"', attributes=True, name=QUOTED_NAME
    ),
    parameter_close="<|close|>argument<|sep|>",
    type_attribute="type",
    text_types=("string",),
    end_tokens=("<|close|>message<|sep|>", "<|end_of_msg|>"),
)

#: MiniCPM5 / MiniCPM4 (template ``openbmb-MiniCPM5-1B.jinja``; llama.cpp
#: ``common/parsers/minicpm5.cpp``, vLLM ``minicpm5xml_tool_parser.py``, SGLang
#: ``minicpm5_detector.py``): no wrapper, each call on its own::
#:
#:     <function name="NAME"><param name="KEY">VALUE</param><param name="K2"><![CDATA[a
#:     <b>]]></param></function>
#:
#: A value holding ``<``, ``&`` or a line feed is written as CDATA (the template's rule), whose
#: inside is the value exactly; blanks around any other value are the markup's (SGLang).
MINICPM5 = XmlCallFormat(
    family="minicpm5",
    invoke=XmlTag('<function name="', ">", quote='"', name=QUOTED_NAME),
    invoke_close="</function>",
    parameter=XmlTag('<param name="', ">", quote='"', name=QUOTED_NAME),
    parameter_close="</param>",
    trim="blanks",
    cdata=True,
    end_tokens=("<|im_end|>",),
)

#: StepFun Step-3 (vLLM ``step3_tool_parser.py``, SGLang ``step3_detector.py``); ``|`` is
#: U+FF5C and the words are joined by ``_`` (DeepSeek's own tokens use ``▁``)::
#:
#:     <|tool_calls_begin|><|tool_call_begin|>function<|tool_sep|>
#:     <steptml:invoke name="NAME"><steptml:parameter name="KEY">VALUE</steptml:parameter>
#:     </steptml:invoke><|tool_call_end|><|tool_calls_end|>
#:
#: Both servers strip a value's blanks. (Step-3.5 writes Qwen3-Coder's calls.)
STEP3 = XmlCallFormat(
    family="step3",
    blocks=((_fullwidth("tool_calls_begin"), _fullwidth("tool_calls_end")),),
    call_prefix=_fullwidth("tool_call_begin") + "function" + _fullwidth("tool_sep"),
    call_suffix=_fullwidth("tool_call_end"),
    invoke=XmlTag('<steptml:invoke name="', ">", quote='"', name=QUOTED_NAME),
    invoke_close="</steptml:invoke>",
    parameter=XmlTag('<steptml:parameter name="', ">", quote='"', name=QUOTED_NAME),
    parameter_close="</steptml:parameter>",
    trim="blanks",
)


def _hunyuan(suffix: str, end_tokens: tuple[str, ...]) -> XmlCallFormat:
    def tag(name: str) -> str:
        return f"<{name}{suffix}>"

    return XmlCallFormat(
        family="hunyuan-hy3",
        blocks=((tag("tool_calls"), tag("/tool_calls")),),
        invoke=XmlTag(tag("tool_call"), tag("tool_sep"), name=BARE_NAME),
        invoke_close=tag("/tool_call"),
        parameter=XmlTag(tag("arg_key"), tag("/arg_key"), name=BARE_NAME),
        value_open=tag("arg_value"),
        parameter_close=tag("/arg_value"),
        end_tokens=end_tokens,
    )


#: Tencent Hunyuan Hy3 (vLLM ``hy_v3_tool_parser.py``): GLM's key/value pairs, the name ended
#: by ``<tool_sep>``, the calls wrapped::
#:
#:     <tool_calls>\n<tool_call>NAME<tool_sep>\n<arg_key>KEY</arg_key>\n<arg_value>VALUE
#:     </arg_value>\n</tool_call>\n</tool_calls>
HUNYUAN_HY3 = _hunyuan("", ())
#: The same, as the template llama.cpp keeps writes every tag (``tencent-Hy3.jinja``:
#: ``HYTK = ':opensource'``, ``<tool_calls:opensource>`` ... ``<|hy_eos:opensource|>``).
HUNYUAN_HY3_OPENSOURCE = _hunyuan(":opensource", (_fullwidth("hy_eos:opensource"),))

#: ZAYA1 (vLLM ``vllm/parser/zaya.py``: "uses the Qwen3 grammar ... but wraps tool calls in
#: ``<zyphra_tool_call>`` instead of ``<tool_call>``"): Qwen3-Coder's calls in its own wrapper.
ZAYA = XmlCallFormat(
    family="zaya",
    blocks=(("<zyphra_tool_call>", "</zyphra_tool_call>"),),
    invoke=XmlTag("<function=", ">"),
    invoke_close="</function>",
    parameter=XmlTag("<parameter=", ">"),
    parameter_close="</parameter>",
    value_ends=("<parameter=", "</function>", "</zyphra_tool_call>"),
    trim="line",
)

_DSML_SPACED = f"{_BAR}DSML{_BAR} "

#: DeepSeek V4.1 (vLLM ``vllm/parser/deepseek_v41.py``, SGLang ``deepseekv41_detector.py``:
#: "The leading space in each tag name below is intentional"): V4's DSML with a space after
#: the bars, the calls in ``calls`` (or V4's ``tool_calls``)::
#:
#:     <|DSML| calls>
#:     <|DSML| invoke name="NAME">
#:     <|DSML| parameter name="KEY" string="true">text</|DSML| parameter>
#:     </|DSML| invoke>
#:     </|DSML| calls>
DEEPSEEK_V41 = _dsml(_DSML_SPACED, ("calls", "tool_calls"))
#: V4.1's spaced DSML with the bars doubled (``<||DSML|| calls>``), as deepseek-v4.1-flash's
#: leaked calls read (command-code#909).
DEEPSEEK_V41_DOUBLED = _dsml(f"{_DSML_DOUBLED} ", ("calls", "tool_calls"))

_GCML = f"{_BAR}GCML{_BAR}"

#: GigaChat 3.5 "GCML" (SGLang ``gigachat35_detector.py``): DeepSeek's DSML spelled with
#: ``GCML``, the calls in ``tool_calls``; ``string="false"`` says JSON. SGLang drops a
#: trailing ``<|message_sep|>`` or ``</s>``, GigaChat's end of turn::
#:
#:     <|GCML|tool_calls>
#:     <|GCML|invoke name="NAME">
#:     <|GCML|parameter name="KEY" string="true">text</|GCML|parameter>
#:     </|GCML|invoke>
#:     </|GCML|tool_calls>
GIGACHAT35 = XmlCallFormat(
    family="gigachat35",
    blocks=((f"<{_GCML}tool_calls>", f"</{_GCML}tool_calls>"),),
    invoke=XmlTag(f'<{_GCML}invoke name="', ">", quote='"', attributes=True, name=QUOTED_NAME),
    invoke_close=f"</{_GCML}invoke>",
    parameter=XmlTag(
        f'<{_GCML}parameter name="', ">", quote='"', attributes=True, name=QUOTED_NAME
    ),
    parameter_close=f"</{_GCML}parameter>",
    type_attribute="string",
    text_types=("true",),
    end_tokens=("<|message_sep|>", "</s>"),
)

#: dots (vLLM ``tool_parsers/dots_tool_parser.py``, SGLang ``dots_detector.py``): MiniMax M2's
#: invokes in ``<dots_function_call>``, several blocks and several invokes a block; both
#: servers strip a value's blanks. (Its JSON fallback in the same wrapper is a row of
#: ``families.py``.)::
#:
#:     <dots_function_call>
#:     <invoke name="NAME">
#:     <parameter name="KEY">VALUE</parameter>
#:     </invoke>
#:     </dots_function_call>
DOTS = XmlCallFormat(
    family="dots",
    blocks=(("<dots_function_call>", "</dots_function_call>"),),
    invoke=XmlTag('<invoke name="', ">", quote='"', name=QUOTED_NAME),
    invoke_close="</invoke>",
    parameter=XmlTag('<parameter name="', ">", quote='"', name=QUOTED_NAME),
    parameter_close="</parameter>",
    trim="blanks",
)

#: Solar Open 2 (vLLM ``tool_parsers/solar_open2_tool_parser.py``, from Upstage's vLLM patch
#: set): no wrapper, each call on its own, the name the rest of the opening line::
#:
#:     <|tool_call:start|>NAME
#:     <|tool_arg:start|>KEY<|tool_arg:value|>VALUE<|tool_arg:end|>
#:     <|tool_call:end|>
#:
#: vLLM keeps a value as written ("Argument values are surfaced as raw strings") and types it
#: by the schema, as toolwire does. (Solar Open, the first one, writes a JSON object: a row of
#: ``families.py``.)
SOLAR_OPEN2 = XmlCallFormat(
    family="solar-open2",
    invoke=XmlTag("<|tool_call:start|>", "\n"),
    invoke_close="<|tool_call:end|>",
    parameter=XmlTag("<|tool_arg:start|>", "<|tool_arg:value|>", name=BARE_NAME),
    parameter_close="<|tool_arg:end|>",
)

#: A name written right after a call's opening tag with no marker of its own: the name runs to
#: the next tag (``<tool_call>NAME<arg_key>``, ``<tool_call>NAME</tool_call>``), blanks around
#: it allowed. The lookahead keeps a name the text may still extend from being read.
_NAME_BEFORE_TAG = r"\s*([^\s<>]+)\s*(?=<)"


def _key_value(
    family: str,
    call: tuple[str, str],
    *,
    prefix: str = "",
    blocks: tuple[tuple[str, str], ...] = (),
    block_optional: bool = False,
) -> XmlCallFormat:
    """GLM's key/value pairs (``<arg_key>K</arg_key><arg_value>V</arg_value>``, each tag
    spelled with ``prefix``), the name right after the call's opening tag."""

    return XmlCallFormat(
        family=family,
        blocks=blocks,
        block_optional=block_optional,
        invoke=XmlTag(call[0], "", name=_NAME_BEFORE_TAG),
        invoke_close=call[1],
        parameter=XmlTag(f"<{prefix}arg_key>", f"</{prefix}arg_key>", name=BARE_NAME),
        value_open=f"<{prefix}arg_value>",
        parameter_close=f"</{prefix}arg_value>",
    )


#: IQuest (SGLang ``iquest_q1_detector.py``): GLM's calls in ``<iquest_tool_call>``, one a
#: block, the name before the first key::
#:
#:     <iquest_tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></iquest_tool_call>
IQUEST = _key_value("iquest", ("<iquest_tool_call>", "</iquest_tool_call>"))

#: Hunyuan HY V4 (vLLM ``tool_parsers/hy_v4_tool_parser.py``): Hy3's tags without
#: ``<tool_sep>``, the name before the first ``<arg_key>`` (or alone)::
#:
#:     <tool_calls><tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>
#:     </tool_call></tool_calls>
HY_V4 = _key_value(
    "hy-v4", ("<tool_call>", "</tool_call>"), blocks=(("<tool_calls>", "</tool_calls>"),)
)

#: K2 Horizon with ``tool_call_format`` ``xml`` (its default; vLLM
#: ``tool_parsers/k2_horizon_tool_parser.py``, SGLang ``k2_v3_detector.py``, which also reads
#: a call outside the group); its JSON form is a row of ``families.py``. The typed form
#: (``<ifm|arg_type>`` between key and value) is not read::
#:
#:     <ifm|tool_calls><ifm|tool_call>NAME<ifm|arg_key>KEY</ifm|arg_key>
#:     <ifm|arg_value>VALUE</ifm|arg_value></ifm|tool_call></ifm|tool_calls>
K2_HORIZON = _key_value(
    "k2-horizon",
    ("<ifm|tool_call>", "</ifm|tool_call>"),
    prefix="ifm|",
    blocks=(("<ifm|tool_calls>", "</ifm|tool_calls>"),),
    block_optional=True,
)

#: Every XML-parameter family, in the order their readers are tried at one position.
XML_FAMILIES: tuple[XmlCallFormat, ...] = (
    QWEN3_CODER,
    SEED_OSS,
    DEEPSEEK_DSML,
    MINIMAX_M2,
    KIMI_K3,
    MINICPM5,
    STEP3,
    HUNYUAN_HY3,
    HUNYUAN_HY3_OPENSOURCE,
    ZAYA,
    DEEPSEEK_V41,
    DEEPSEEK_DSML_DOUBLED,
    DEEPSEEK_V41_DOUBLED,
    GIGACHAT35,
    DOTS,
    SOLAR_OPEN2,
    IQUEST,
    HY_V4,
    K2_HORIZON,
)
