"""One example call per text-call family: the shared fixture of the family-wide properties.

``EXAMPLE_CALLS`` maps a family name to texts that are, each on its own, one runnable call (or a
few) of ``get_weather`` / ``get_time`` in that family's own markup. Properties that must hold for
every family (``test_reasoning.py``: a call inside a reasoning wrapper never runs) iterate over
the registered families and take their examples from here.

**Adding a family?** Add its example here, written from its chat template, model card or its
server's parser source (never from the servers' own parser test files), with the provenance in
a comment. ``test_every_built_in_family_has_an_example`` fails, naming the family, until it is
here; ``test_an_example_is_a_call_on_its_own`` checks that it is read as a call.
"""

from __future__ import annotations

from typing import Any

from toolwire.stages.text_calls.deepseek import deepseek_token as _ds

__all__ = ["EXAMPLE_CALLS", "EXAMPLE_TOOLS"]

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
}
#: The tools every example calls.
EXAMPLE_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": name, "parameters": _SCHEMA}}
    for name in ("get_weather", "get_time")
]

#: family -> texts, each one (or more) runnable calls of that family alone.
EXAMPLE_CALLS: dict[str, tuple[str, ...]] = {
    # Hermes 2 Pro / Qwen 2.5 templates (models/templates/*Hermes*, Qwen-Qwen2.5-7B-Instruct).
    "hermes": (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    ),
    # Qwen3-Coder template (models/templates/Qwen3-Coder.jinja).
    "qwen3-coder": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>",
    ),
    # GLM-4.6 template (models/templates/GLM-4.6.jinja).
    "glm": (
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
    ),
    # GLM-4-0414: the name on its own line, then the JSON arguments (mlx-swift-lm#623).
    "glm-markerless": ('get_weather\n{"city": "Paris"}',),
    # Llama 3.1 template (<|python_tag|>), Llama 4 (<|python_start|>), Llama 3.1 <function=...>.
    "llama": (
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
        '<|python_start|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|python_end|>',
        # vLLM llama4_pythonic_tool_parser.py: a pythonic list between the same tokens.
        '<|python_start|>[get_weather(city="Paris")]<|python_end|>',
        '<function=get_weather>{"city": "Paris"}</function>',
    ),
    # A reply that is wholly a call object (llama.cpp's generic format, ollama#12174).
    "json": ('{"name": "get_weather", "arguments": {"city": "Paris"}}',),
    # Llama 3.2 pythonic template.
    "pythonic": ("[get_weather(city='Paris')]",),
    # LFM2 template (models/templates/LFM2-8B-A1B.jinja).
    "lfm2": ("<|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|>",),
    # Gemma 3 tool_code prompts.
    "gemma-tool-code": ('```tool_code\nget_weather(city="Paris")\n```',),
    # Mistral v3 ([TOOL_CALLS][...]) and Ministral 3 / Magistral (NAME[ARGS]{...}) templates.
    "mistral": (
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
    ),
    # Kimi K2 template (models/templates/moonshotai-Kimi-K2.jinja).
    "kimi": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
    ),
    # DeepSeek V3.1 template (models/templates/deepseek-ai-DeepSeek-V3.1.jinja).
    "deepseek": (
        f"{_ds('tool_calls_begin')}{_ds('tool_call_begin')}get_weather{_ds('tool_sep')}"
        f'{{"city": "Paris"}}{_ds("tool_call_end")}{_ds("tool_calls_end")}',
    ),
    # gpt-oss template (models/templates/openai-gpt-oss-120b.jinja).
    "harmony": (
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city": "Paris"}<|call|>',
    ),
    # Gemma 4 template (models/templates/google-gemma-4-31B-it.jinja).
    "gemma4": ('<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>',),
    # FunctionGemma model card.
    "functiongemma": (
        "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>",
    ),
    # The rows of stages/text_calls/families.py; each from the source its row and its
    # test_family_*.py module name.
    # ibm-granite-granite-3.3-2B-Instruct.jinja: <|tool_call|> then a JSON list.
    "granite": ('<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',),
    # vLLM granite_20b_fc_tool_parser.py.
    "granite-fc": ('<function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}',),
    # fireworks-ai-llama-3-firefunction-v2.jinja.
    "functools": (' functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]',),
    # NVIDIA-Nemotron-Nano-v2.jinja.
    "nemotron": ('<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>',),
    # Apriel-1.6-15b-Thinker-fixed.jinja (Jamba's and Hunyuan-A13B's tags too).
    "jamba": (
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>',
    ),
    # Apertus-8B-Instruct.jinja.
    "apertus": ('<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>',),
    # CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja.
    "cohere": (
        '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", '
        '"parameters": {"city": "Paris"}}]<|END_ACTION|>',
    ),
    # CohereForAI-c4ai-command-r-plus-tool_use.jinja.
    "command-r": (
        'Action:\n```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]```',
    ),
    # GigaChat3-10B-A1.8B.jinja and GigaChat3.1-10B-A1.8B.jinja.
    "gigachat": (
        '<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "get_weather", '
        '"arguments": {"city": "Paris"}}',
        '<|function_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}',
    ),
    # lmdeploy/model.py (InternLM2).
    "internlm": (
        '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}'
        "<|action_end|>",
    ),
    # vLLM longcat_tool_parser.py.
    "longcat": (
        '<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
        "</longcat_tool_call>",
    ),
    # vLLM olmo3_tool_parser.py.
    "olmo3": ('<function_calls>\nget_weather(city="Paris")\n</function_calls>',),
    # The XML-parameter families (stages/text_calls/xml_families.py; each row names its
    # source). ByteDance-Seed-OSS.jinja.
    "seed-oss": (
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
        "</function>\n</seed:tool_call>",
    ),
    # deepseek-ai-DeepSeek-V3.2.jinja and -V4.jinja (the bars are U+FF5C).
    "deepseek-dsml": (
        '<\uff5cDSML\uff5cfunction_calls>\n<\uff5cDSML\uff5cinvoke name="get_weather">\n'
        '<\uff5cDSML\uff5cparameter name="city" string="true">Paris</\uff5cDSML\uff5cparameter>\n'
        "</\uff5cDSML\uff5cinvoke>\n</\uff5cDSML\uff5cfunction_calls>",
        '<\uff5cDSML\uff5ctool_calls>\n<\uff5cDSML\uff5cinvoke name="get_weather">\n'
        '<\uff5cDSML\uff5cparameter name="city" string="true">Paris</\uff5cDSML\uff5cparameter>\n'
        "</\uff5cDSML\uff5cinvoke>\n</\uff5cDSML\uff5ctool_calls>",
        # The same with each bar doubled, as leaked V4 calls read (command-code#909,
        # lsdefine/GenericAgent#804).
        "<\uff5c\uff5cDSML\uff5c\uff5ctool_calls>\n"
        '<\uff5c\uff5cDSML\uff5c\uff5cinvoke name="get_weather">\n'
        '<\uff5c\uff5cDSML\uff5c\uff5cparameter name="city" string="true">Paris'
        "</\uff5c\uff5cDSML\uff5c\uff5cparameter>\n"
        "</\uff5c\uff5cDSML\uff5c\uff5cinvoke>\n</\uff5c\uff5cDSML\uff5c\uff5ctool_calls>",
    ),
    # MiniMax-M2.jinja.
    "minimax-m2": (
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris'
        "</parameter>\n</invoke>\n</minimax:tool_call>",
    ),
    # MiniMax-M3.jinja.
    "minimax-m3": (
        ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>'
        "Paris]<]minimax[>[</city>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
    ),
    # Kimi-K3.jinja.
    "kimi-k3": (
        '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|><|open|>argument '
        'key="city" type="string"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|>'
        "<|close|>tools<|sep|>",
    ),
    # openbmb-MiniCPM5-1B.jinja.
    "minicpm5": ('<function name="get_weather"><param name="city">Paris</param></function>',),
    # vLLM step3_tool_parser.py / SGLang step3_detector.py (the bars are U+FF5C).
    "step3": (
        "<\uff5ctool_calls_begin\uff5c><\uff5ctool_call_begin\uff5c>function<\uff5ctool_sep\uff5c>"
        '<steptml:invoke name="get_weather"><steptml:parameter name="city">Paris'
        "</steptml:parameter></steptml:invoke><\uff5ctool_call_end\uff5c><\uff5ctool_calls_end\uff5c>",
    ),
    # tencent-Hy3.jinja (HYTK = ":opensource") and vLLM hy_v3_tool_parser.py (no suffix).
    "hunyuan-hy3": (
        "<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n"
        "<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Paris"
        "</arg_value:opensource>\n</tool_call:opensource>\n</tool_calls:opensource>",
        "<tool_calls>\n<tool_call>get_weather<tool_sep>\n<arg_key>city</arg_key>\n"
        "<arg_value>Paris</arg_value>\n</tool_call>\n</tool_calls>",
    ),
    # The families issue 28's survey of the servers' parsers added (each test_family_*.py
    # module names its sources). MiniMax-M1.jinja: one call object a line in <tool_calls>.
    "minimax-m1": (
        '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_calls>',
    ),
    # vLLM parser/inkling.py: <|message_model|><|content_invoke_tool_json|>{"name", "args"}.
    "inkling": (
        '<|message_model|><|content_invoke_tool_json|>{"name": "get_weather", "args": '
        '{"city": "Paris"}}<|end_message|>',
    ),
    # vLLM dots_tool_parser.py: XML invokes, or a JSON object, in <dots_function_call>.
    "dots": (
        '<dots_function_call>\n<invoke name="get_weather">\n<parameter name="city">Paris'
        "</parameter>\n</invoke>\n</dots_function_call>",
        '<dots_function_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        "</dots_function_call>",
    ),
    # vLLM k2_horizon_tool_parser.py: tool_call_format "xml" (the default) and "json".
    "k2-horizon": (
        "<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key>"
        "<ifm|arg_value>Paris</ifm|arg_value></ifm|tool_call></ifm|tool_calls>",
        '<ifm|tool_calls><ifm|tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
        "</ifm|tool_call></ifm|tool_calls>",
    ),
    # upstage-Solar-Open-100B.jinja.
    "solar-open": (
        "<|tool_calls|><|tool_call:begin|>k3x9q2m7a1<|tool_call:name|>get_weather"
        '<|tool_call:args|>{"city": "Paris"}<|tool_call:end|><|calls|>',
    ),
    # vLLM solar_open2_tool_parser.py.
    "solar-open2": (
        "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Paris"
        "<|tool_arg:end|>\n<|tool_call:end|>",
    ),
    # vLLM parser/plamo3.py and get_plamo3_structural_tag.
    "plamo3": (
        "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
        "<|plamo:begin_tool_name:plamo|>get_weather<|plamo:end_tool_name:plamo|>"
        '<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{"city": "Paris"}'
        "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
        "<|plamo:end_tool_requests:plamo|>",
    ),
    # vLLM step_audio_2_tool_parser.py.
    "step-audio2": ('<tool_call>function\nget_weather\n{"city": "Paris"}</tool_call>',),
    # meetkai-functionary-medium-v3.2.jinja (a call after text; the prompt ends with ">>>").
    "functionary-v3.2": ('all\nLet me check.>>>get_weather\n{"city": "Paris"}',),
    # vLLM vllm/parser/zaya.py.
    "zaya": (
        "<zyphra_tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</zyphra_tool_call>",
    ),
    # SGLang gigachat35_detector.py (the bars are U+FF5C).
    "gigachat35": (
        '<\uff5cGCML\uff5ctool_calls>\n<\uff5cGCML\uff5cinvoke name="get_weather">\n'
        '<\uff5cGCML\uff5cparameter name="city" string="true">Paris</\uff5cGCML\uff5cparameter>\n'
        "</\uff5cGCML\uff5cinvoke>\n</\uff5cGCML\uff5ctool_calls>",
    ),
    # SGLang iquest_q1_detector.py.
    "iquest": (
        "<iquest_tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
        "</iquest_tool_call>",
    ),
    # muse-glimmer.jinja: the reply's first message addressed to the tool.
    "muse": (
        ' to=get_weather<|message|><atem:function_calls>\n<atem:invoke name="get_weather">\n'
        '<atem:parameter name="city">Paris</atem:parameter>\n</atem:invoke>\n'
        "</atem:function_calls><|eom|>",
    ),
    # vLLM hy_v4_tool_parser.py.
    "hy-v4": (
        "<tool_calls><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
        "</tool_call></tool_calls>",
    ),
}
