"""DeepSeek V3.2 / V4 DSML calls (``deepseek-dsml``).

Cases written from the chat templates llama.cpp keeps (``models/templates/deepseek-ai-DeepSeek-
V3.2.jinja``, ``-V4.jinja``, ``-V4-Flash-0731.jinja``: the block after ``\\n\\n``, one
``invoke`` a call, ``string="true"`` for text and ``"false"`` with ``tojson`` for the rest, an
empty call as ``\\n``, then ``<|end▁of▁sentence|>``) and the parsers' source (llama.cpp
``common/parsers/deepseek.cpp``, vLLM ``vllm/tool_parsers/deepseekv32_tool_parser.py``).
"""

from __future__ import annotations

from ._family_contract import FamilyContract, runnable

D = "\uff5cDSML\uff5c"
EOS = "<\uff5cend▁of▁sentence\uff5c>"


def block(*invokes: str, v4: bool = False) -> str:
    """A DSML block as the templates write it."""
    name = "tool_calls" if v4 else "function_calls"
    return f"<{D}{name}>\n" + "".join(invokes) + f"</{D}{name}>"


def invoke(name: str, *parameters: str) -> str:
    return f'<{D}invoke name="{name}">\n' + "".join(parameters) + f"</{D}invoke>\n"


def parameter(key: str, value: str, *, text: bool = True) -> str:
    kind = "true" if text else "false"
    return f'<{D}parameter name="{key}" string="{kind}">{value}</{D}parameter>\n'


PARIS = block(invoke("get_weather", parameter("city", "Paris")))
TYPED = block(
    invoke(
        "get_weather",
        parameter("city", "New York"),
        parameter("n", "3", text=False),
        parameter("tags", '["rain", "wind"]', text=False),
        parameter("opts", '{"unit": "c"}', text=False),
    ),
    invoke("get_time", "\n"),  # V4 writes "\n" for a call with no arguments
    v4=True,
)


class TestDeepSeekDsml(FamilyContract):
    family = "deepseek-dsml"
    calls = (
        (PARIS, [("get_weather", {"city": "Paris"})]),
        # Content first, then the block after "\n\n" (the templates' assistant turn).
        ("I'll check the weather.\n\n" + PARIS + EOS, [("get_weather", {"city": "Paris"})]),
        (
            TYPED,
            [
                (
                    "get_weather",
                    {"city": "New York", "n": 3, "tags": ["rain", "wind"], "opts": {"unit": "c"}},
                ),
                ("get_time", {}),
            ],
        ),
        # Two blocks, one after the other.
        (
            PARIS + "\n\n" + block(invoke("get_time"), v4=True),
            [("get_weather", {"city": "Paris"}), ("get_time", {})],
        ),
        # string="true": the value is the text exactly as written (spaces, digits, lines).
        (
            block(invoke("get_weather", parameter("note", " 42\nsecond line "))),
            [("get_weather", {"note": " 42\nsecond line "})],
        ),
        # A dotted tool name that was offered is that tool.
        (
            block(invoke("Calendar.create_event", parameter("city", "Oslo"))),
            [("Calendar.create_event", {"city": "Oslo"})],
        ),
    )
    not_calls = (
        block(invoke("delete_everything", parameter("city", "Paris"))),
        # One name is not offered: the block is not wholly calls, so none of it runs.
        block(invoke("get_weather", parameter("city", "Paris")), invoke("delete_everything")),
        # Quoted in prose: markup with text after it is a sentence, not a call.
        "The model answers with " + PARIS + " and waits for the result.",
        "```\n" + PARIS + "\n```",
        "<think>\n" + PARIS + "\n</think>\nNo tool is needed.",
        # A key twice has no single reading.
        block(invoke("get_weather", parameter("city", "A"), parameter("city", "B"))),
        # A parameter left open up to the call's close is not the grammar.
        block(invoke("get_weather", f'<{D}parameter name="city" string="true">Paris\n')),
        # The tool results the template writes are not calls.
        "<function_results>\n<result>sunny</result>\n</function_results>",
    )
    cut_texts = (
        PARIS,
        TYPED,
    )


def test_a_value_the_markup_calls_json_that_is_not_json_stays_text() -> None:
    """``string="false"`` on a value that is not JSON: it is text, typed by the schema as any
    other (vLLM keeps it as it is); the judge's schema check decides."""
    text = block(invoke("get_weather", parameter("city", "Paris", text=False)))
    assert runnable(text) == [("get_weather", {"city": "Paris"})]


def test_a_value_without_the_attribute_is_typed_by_the_schema() -> None:
    text = block(invoke("get_weather", f'<{D}parameter name="n">7</{D}parameter>\n'))
    assert runnable(text) == [("get_weather", {"n": 7})]


def test_the_end_of_sentence_token_is_markup_not_text() -> None:
    from ._family_contract import TOOLS
    from ._harness import run_text

    turn, _ = run_text(["Sure.\n\n" + PARIS + EOS], TOOLS)
    assert turn.text == "Sure.\n\n"
    assert [call.name for call in turn.runnable] == ["get_weather"]
