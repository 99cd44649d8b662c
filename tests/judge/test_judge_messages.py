"""Snapshots of the model-facing message, one per rejection reason."""

from __future__ import annotations

import msgspec

from toolwire.judge import Policy, parse_arguments, render_message

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "mode": {"enum": ["r", "w"]}},
    "required": ["path"],
    "additionalProperties": False,
}
RETRY = (
    "A plain retry will hit the same limit: send smaller arguments, "
    "or split the work into several smaller calls."
)


def test_truncated() -> None:
    # The text alone shows the call is cut, not why: no claim about the token limit.
    raw = '{"path": "a.rs", "old": "x'
    assert parse_arguments(raw, tool="edit", call_id="call_1").message == (
        "Tool call `edit` (id call_1): its arguments end after 26 characters, before the call "
        "was complete, so it was not run. Why it stopped is not known.\n"
        "The arguments end inside a string.\n"
        'Received (26 characters): {"path": "a.rs", "old": "x\n'
        "Call `edit` again with the complete arguments."
    )


def test_truncated_at_the_token_limit() -> None:
    raw = '{"path": "a.rs", "old": "x'
    verdict = parse_arguments(raw, tool="edit", call_id="call_1")
    assert render_message(verdict, tool="edit", raw=raw, call_id="call_1",
                          cut_by="token_limit") == (
        "Tool call `edit` (id call_1): it was cut off at the output-token limit after 26 "
        "characters, so it was not run.\n"
        "The arguments end inside a string.\n"
        'Received (26 characters): {"path": "a.rs", "old": "x\n' + RETRY
    )


def test_truncated_by_the_stream() -> None:
    assert parse_arguments('{"a": 1]', tool="t", truncated=True).message == (
        "Tool call `t`: its arguments end after 8 characters, before the call was complete, "
        "so it was not run. Why it stopped is not known.\n"
        "The stream shows the call was cut off; the text does not parse: expected ',' or "
        "'}' but found ']' at line 1, column 8.\n"
        'Received (8 characters): {"a": 1]\n'
        "Call `t` again with the complete arguments."
    )


def test_not_json() -> None:
    assert parse_arguments('{\n  "a": 1]', tool="t").message == (
        "Tool call `t` was not run: its arguments are not valid JSON.\n"
        "Problem: Expected ',' or '}' but found ']' at line 2, column 9.\n"
        'Received (11 characters): {\n  "a": 1]\n'
        "Call `t` again with its arguments as exactly one JSON object: keys and string values "
        "in double quotes, nothing before or after it."
    )


def test_wrong_type() -> None:
    assert parse_arguments("[1, 2]", tool="bash").message == (
        "Tool call `bash` was not run: its arguments must be a JSON object.\n"
        "The arguments are a JSON array.\n"
        "Received (6 characters): [1, 2]\n"
        "Call `bash` again with one JSON object whose keys are the parameter names."
    )


def test_ambiguous() -> None:
    assert parse_arguments('{"a":1}{"b":2}', tool="t").message == (
        "Tool call `t` was not run: its arguments hold more than one JSON object, so there is "
        "no single call to run.\n"
        "Found 2 objects, at characters 0, 7.\n"
        'Received (14 characters): {"a":1}{"b":2}\n'
        "Make one call per action, each with exactly one JSON object as its arguments."
    )


def test_schema() -> None:
    raw = '{"mode": "x", "extra": 1}'
    assert parse_arguments(raw, tool="read", schema=SCHEMA, call_id="c9").message == (
        "Tool call `read` (id c9) was not run: its arguments do not match the parameters of "
        "`read`:\n"
        "- $.extra: unexpected property (the tool does not accept it)\n"
        '- $.mode: "x" is not one of "r", "w"\n'
        '- $: missing required property "path"\n'
        'Received (25 characters): {"mode": "x", "extra": 1}\n'
        "Fix these and call `read` again."
    )


def test_unknown_tool() -> None:
    assert parse_arguments("{}", tool="reed", known_tools=["write", "read"]).message == (
        "Tool call `reed` was not run: there is no tool named `reed`.\n"
        "Available tools: read, write.\n"
        "Received (2 characters): {}\n"
        "Call one of the available tools by its exact name."
    )


def test_too_large() -> None:
    raw = "x" * 600
    assert parse_arguments(raw, tool="w", policy=Policy(max_bytes=100)).message == (
        "Tool call `w` was not run: its arguments are too large.\n"
        "The arguments are over 100 bytes of UTF-8 (600 characters); the limit is 100 bytes.\n"
        f"Received (first 500 of 600 characters): {'x' * 500}…\n"
        "Send smaller arguments, or split the work into several smaller calls."
    )


def test_empty_and_unprintable_quotes() -> None:
    message = parse_arguments("", tool="t", schema=SCHEMA).message
    assert message is not None
    assert "Received: nothing (the arguments were empty)." in message
    message = parse_arguments("\x01\ud800", tool="t").message
    assert message is not None
    assert "Received (2 characters): \\x01\ufffd" in message


def test_render_message_re_renders_with_the_call_id() -> None:
    raw = "[1]"
    verdict = parse_arguments(raw, tool="bash")
    assert verdict.message is not None
    again = render_message(verdict, tool="bash", raw=raw, call_id="call_7")
    assert again == verdict.message.replace("`bash` was", "`bash` (id call_7) was", 1)
    assert render_message(parse_arguments("{}", tool="t"), tool="t", raw="{}") is None
    replaced = msgspec.structs.replace(verdict, message=again)
    assert replaced.to_public_dict()["message"] == again
