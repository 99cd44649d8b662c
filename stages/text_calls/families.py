"""The families that differ only in their markers: one row each, read by ``wrapped.py``.

Each row was learned from the model's chat template (llama.cpp ``models/templates/``), the
servers' parser source and public reports, named next to it. ``docs/text-calls.md`` has the
same families in its table, with the servers that parse each and how its end arrives.
"""

from __future__ import annotations

from ._shapes import COHERE_CALL, NAME_KEYED_CALL
from .wrapped import WrappedFamily, WrappedReader, wrapped_reader

__all__ = ["WRAPPED_FAMILIES", "WRAPPED_READERS"]

WRAPPED_FAMILIES: tuple[WrappedFamily, ...] = (
    # Hermes, Qwen 2.5/3, SmolLM2 (a list inside: <tool_call>[{...}]</tool_call>), Granite 4,
    # Ernie 4.5, MiMo, Bielik, Reka: "<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>"
    # (Qwen-Qwen2.5-7B-Instruct.jinja, ibm-granite-granite-4.0.jinja). The tag is also written
    # in prose, so only at the tail; a </tool_call> inside a JSON string is text of the string
    # (vllm#45167, sglang#28698).
    # ChatML ends the turn with <|im_end|> (Qwen-Qwen2.5-7B-Instruct.jinja), some builds
    # with <|endoftext|>.
    WrappedFamily(
        family="hermes",
        opener="<tool_call>",
        closer="</tool_call>",
        end_tokens=("<|im_end|>", "<|endoftext|>"),
    ),
    # Llama 4: <|python_start|> JSON or a pythonic list <|python_end|> (vllm#16214; vLLM
    # tool_parsers/llama4_pythonic_tool_parser.py strips both tokens around a pythonic list);
    # <|eom|> / <|eot|> end Llama 4's turns (llama.END_TOKENS).
    WrappedFamily(
        family="llama",
        opener="<|python_start|>",
        grammar="json-or-pythonic",
        closer="<|python_end|>",
        end_tokens=("<|eom|>", "<|eot|>"),
        tail_only=False,
    ),
    # LFM2 / LFM2.5: <|tool_call_start|>[f(a=1)]<|tool_call_end|> (lmstudio#1979; llama.cpp
    # common/parsers/lfm2.cpp). ASCII tokens that documentation quotes: only at the tail.
    # Its template is ChatML's: <|im_end|> ends the turn (little-coder#42 shows it left after
    # the call).
    WrappedFamily(
        family="lfm2",
        opener="<|tool_call_start|>",
        grammar="pythonic",
        bare=False,
        closer="<|tool_call_end|>",
        end_tokens=("<|im_end|>",),
    ),
    # Gemma 3 prompts: a ```tool_code fence of keyword calls, a list or one per line.
    WrappedFamily(
        family="gemma-tool-code", opener="```tool_code\n", grammar="pythonic", closer="```"
    ),
    # OLMo 3: <function_calls>\nf(a=1)\ng(b=null)\n</function_calls> (vLLM
    # tool_parsers/olmo3_tool_parser.py: newline-separated pythonic calls in the tag).
    WrappedFamily(
        family="olmo3",
        opener="<function_calls>",
        grammar="pythonic",
        lists=False,
        closer="</function_calls>",
    ),
    # Granite 3.0-3.3: "respond only with <|tool_call|> followed by a JSON list of tools used"
    # (ibm-granite-granite-3.3-2B-Instruct.jinja); no closing marker; vLLM
    # tool_parsers/granite_tool_parser.py reads [{"name", "arguments"}] after the token.
    WrappedFamily(
        family="granite", opener="<|tool_call|>", bare=False, end_tokens=("<|end_of_text|>",)
    ),
    # granite-20b-functioncalling: <function_call> {"name", "arguments"}, one marker per call,
    # no closing marker (vLLM tool_parsers/granite_20b_fc_tool_parser.py).
    WrappedFamily(family="granite-fc", opener="<function_call>", lists=False),
    # Firefunction v2: " functools[{"name": ..., "arguments": ...}, ...]" then <|eot_id|>, "no
    # closing marker required" (fireworks-ai-llama-3-firefunction-v2.jinja); Phi-4-mini with
    # vLLM's template (tool_parsers/phi4mini_tool_parser.py reads functools[...]), <|end|>.
    WrappedFamily(
        family="functools", opener="functools", bare=False, end_tokens=("<|eot_id|>", "<|end|>")
    ),
    # Nemotron Nano v2: <TOOLCALL>[{"name", "arguments"}]</TOOLCALL> then <SPECIAL_12>
    # (NVIDIA-Nemotron-Nano-v2.jinja; llama.cpp's Nemotron Nano v2 patch in
    # common/chat-diff-analyzer.cpp; vLLM tool_parsers/nemotron_json_tool_parser.py also reads a
    # bare object).
    WrappedFamily(
        family="nemotron", opener="<TOOLCALL>", closer="</TOOLCALL>", end_tokens=("<SPECIAL_12>",)
    ),
    # Jamba 1.5-1.7, Apriel 1.5 / 1.6, Hunyuan-A13B:
    # <tool_calls>[{"name", "arguments"}]</tool_calls> (vLLM tool_parsers/jamba_tool_parser.py
    # and hunyuan_a13b_tool_parser.py; unsloth-Apriel-1.5.jinja and
    # Apriel-1.6-15b-Thinker-fixed.jinja, which end the turn with <|end|>).
    WrappedFamily(
        family="jamba",
        opener="<tool_calls>",
        bare=False,
        closer="</tool_calls>",
        end_tokens=("<|end|>",),
    ),
    # Apertus: <|tools_prefix|>[{"NAME": {args}}]<|tools_suffix|> (Apertus-8B-Instruct.jinja);
    # vLLM (tool_parsers/apertus_tool_parser.py) and Ollama (model/parsers/apertus15.go) read
    # the list without <|tools_suffix|> at the end of the output.
    WrappedFamily(
        family="apertus",
        opener="<|tools_prefix|>",
        shape=NAME_KEYED_CALL,
        closer="<|tools_suffix|>",
        closer_optional=True,
        end_tokens=("<|assistant_end|>",),
    ),
    # Command R7B, Command A, North (Cohere2 MoE): <|START_ACTION|>[{"tool_call_id": "0",
    # "tool_name": ..., "parameters": {...}}]<|END_ACTION|><|END_OF_TURN_TOKEN|>
    # (CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja, Cohere2MoE.jinja; llama.cpp
    # common/parsers/cohere2moe.cpp; SGLang function_call/cohere_command4_detector.py; Ollama
    # model/parsers/cohere.go).
    WrappedFamily(
        family="cohere",
        opener="<|START_ACTION|>",
        shape=COHERE_CALL,
        closer="<|END_ACTION|>",
        end_tokens=("<|END_OF_TURN_TOKEN|>",),
    ),
    # Command R / R+ (2024): "Action:\n```json\n[{"tool_name": ..., "parameters": {...}}]```"
    # (CohereForAI-c4ai-command-r-plus-tool_use.jinja; Ollama model/parsers/commandr.go, which
    # also reads one object and skips the "directly-answer" pseudo-tool: never offered, so
    # never a call here).
    WrappedFamily(
        family="command-r",
        opener="Action:",
        then=("```json",),
        shape=COHERE_CALL,
        closer="```",
        end_tokens=("<|END_OF_TURN_TOKEN|>",),
    ),
    # GigaChat 3: "<|message_sep|>\n\nfunction call<|role_sep|>\n{"name", "arguments"}", one
    # call, last in the reply (GigaChat3-10B-A1.8B.jinja; llama.cpp
    # common/parsers/gigachat-v3.cpp; vLLM tool_parsers/gigachat3_tool_parser.py, which also
    # drops a trailing </s>). GigaChat 3.1: <|function_call|>{...} (GigaChat3.1-10B-A1.8B.jinja).
    WrappedFamily(
        family="gigachat",
        opener="<|message_sep|>",
        then=("function call<|role_sep|>",),
        lists=False,
        end_tokens=("<|message_sep|>", "</s>"),
    ),
    WrappedFamily(
        family="gigachat",
        opener="<|function_call|>",
        lists=False,
        end_tokens=("<|message_sep|>", "</s>"),
    ),
    # InternLM2 / 2.5, Intern-S1: <|action_start|><|plugin|>\n{"name", "parameters"}<|action_end|>
    # (vLLM tool_parsers/internlm2_tool_parser.py; SGLang function_call/internlm_detector.py
    # allows a blank between the two tokens); <|action_end|> is a stop word in lmdeploy's
    # InternLM2 template (lmdeploy/model.py), so it may never be sent.
    WrappedFamily(
        family="internlm",
        opener="<|action_start|>",
        then=("<|plugin|>",),
        lists=False,
        closer="<|action_end|>",
        closer_optional=True,
        end_tokens=("<|im_end|>",),
    ),
    # LongCat-Flash: Hermes with its own tag (vLLM tool_parsers/longcat_tool_parser.py).
    WrappedFamily(family="longcat", opener="<longcat_tool_call>", closer="</longcat_tool_call>"),
    # MiniMax-M1: "<tool_calls>\n{"name", "arguments"}\n{...}\n</tool_calls><end_of_sentence>",
    # one call object a line (MiniMax-M1.jinja). Jamba's row has the same opener and reads
    # only a list; this one reads no list: the two never both read a block.
    WrappedFamily(
        family="minimax-m1",
        opener="<tool_calls>",
        lists=False,
        several=True,
        closer="</tool_calls>",
        end_tokens=("<end_of_sentence>",),
    ),
    # Inkling: <|message_model|>[NAME]<|content_invoke_tool_json|>{"name": ..., "args": {...}}
    # <|end_message|>, every marker a special token; a block may also end with the
    # standalone <|content_model_end_sampling|> (vLLM parser/inkling.py, SGLang
    # function_call/inkling_detector.py). The optional name header before the marker stays text.
    WrappedFamily(
        family="inkling",
        opener="<|content_invoke_tool_json|>",
        lists=False,
        closer="<|end_message|>",
        closer_optional=True,
        end_tokens=("<|content_model_end_sampling|>",),
        tail_only=False,
    ),
    # dots: its XML invokes in <dots_function_call> (xml_families.py), or "a JSON object with
    # name and arguments ... as a fallback" in the same wrapper (vLLM
    # tool_parsers/dots_tool_parser.py, SGLang function_call/dots_detector.py).
    WrappedFamily(
        family="dots",
        opener="<dots_function_call>",
        lists=False,
        closer="</dots_function_call>",
    ),
    # K2 Horizon with tool_call_format "json": <ifm|tool_calls><ifm|tool_call>{"name",
    # "arguments"}</ifm|tool_call>...</ifm|tool_calls> (vLLM tool_parsers/k2_horizon_tool_parser.py;
    # SGLang function_call/k2_v3_detector.py also reads a call without the group, and a list).
    WrappedFamily(
        family="k2-horizon",
        opener="<ifm|tool_call>",
        closer="</ifm|tool_call>",
        group_open="<ifm|tool_calls>",
        group_close="</ifm|tool_calls>",
        tail_only=False,
    ),
    # Solar Open: "<|tool_calls|><|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>
    # {json}<|tool_call:end|>...<|calls|>", the id "10 lowercase letters and/or digits"
    # (upstage-Solar-Open-100B.jinja; llama.cpp's auto-parser with its "Solar Open" patch in
    # common/chat-diff-analyzer.cpp). <|calls|> ends the assistant's tool-call message.
    WrappedFamily(
        family="solar-open",
        opener="<|tool_call:begin|>",
        id_end="<|tool_call:name|>",
        name_end="<|tool_call:args|>",
        closer="<|tool_call:end|>",
        group_open="<|tool_calls|>",
        group_close="<|calls|>",
        group_close_optional=True,
        tail_only=False,
    ),
    # PLaMo 3: <|plamo:begin_tool_requests:plamo|>, each call <|plamo:begin_tool_request:plamo|>
    # <|plamo:begin_tool_name:plamo|>NAME<|plamo:end_tool_name:plamo|>
    # <|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{json}
    # <|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>, then
    # <|plamo:end_tool_requests:plamo|> and <|plamo:tag|> (vLLM parser/plamo3.py and
    # tool_parsers/structural_tag_registry.py, get_plamo3_structural_tag). The markers are
    # "split into multiple tokenizer tokens" (plamo3.py): text, so only at the tail.
    WrappedFamily(
        family="plamo3",
        opener="<|plamo:begin_tool_request:plamo|>",
        then=("<|plamo:begin_tool_name:plamo|>",),
        name_end=(
            "<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>"
            "<|plamo:constrain|>json<|plamo:msg|>"
        ),
        closer="<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>",
        group_open="<|plamo:begin_tool_requests:plamo|>",
        group_close="<|plamo:end_tool_requests:plamo|>",
        end_tokens=("<|plamo:tag|>",),
    ),
    # Step-Audio 2: "<tool_call>function\nNAME\n{json}</tool_call>" (vLLM
    # tool_parsers/step_audio_2_tool_parser.py: "function\nforecast_weather\n{"location":
    # "shanghai"}"). Hermes's row reads the same opener with JSON right after it.
    WrappedFamily(
        family="step-audio2",
        opener="<tool_call>",
        then=("function\n",),
        name_end="\n",
        closer="</tool_call>",
    ),
    # Functionary v3.2: ">>>NAME\n{json}" per call, then <|eot_id|>
    # (meetkai-functionary-medium-v3.2.jinja; llama.cpp common/parsers/functionary-v3-2.cpp).
    # The generation prompt ends with ">>>", so the reply's first call is "NAME\n{json}"
    # (read as a whole reply, glm-markerless's grammar) and text is "all\n..." (">>>all").
    WrappedFamily(
        family="functionary-v3.2",
        opener=">>>",
        name_end="\n",
        lists=False,
        end_tokens=("<|eot_id|>",),
    ),
)

#: One reader per row, in the table's order.
WRAPPED_READERS: tuple[WrappedReader, ...] = tuple(map(wrapped_reader, WRAPPED_FAMILIES))
