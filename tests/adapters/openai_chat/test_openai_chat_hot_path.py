"""The mapper's hot path reads every chunk exactly as its full decoder does.

``OpenAIChatMapper.feed_bytes`` decodes a chunk in the middle of a stream into a narrow
Struct that only accepts the common shape (one choice 0 with a delta, no finish, no usage, no
error) and reads anything else again with the full decoder. ``payload()`` always takes the full
decoder, chunk by chunk: the two must give the same events for any mix of shapes, in any
order, whatever the decoder has to fall back on (a finish in mid-stream, usage on a content
chunk, an error object, a second choice, ``delta: null``, reasoning, the legacy
``function_call``, non-JSON, an empty payload, ``[DONE]``).
"""

from __future__ import annotations

import json
from typing import Any

from _mapper_properties import normalized
from _toolwire_testdata import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.adapters.openai_chat import OpenAIChatMapper
from toolwire.core.events import Event

FIRST = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": []}


def _choice(delta: Any, *, index: int = 0, finish: str | None = None) -> dict[str, Any]:
    return {"index": index, "delta": delta, "finish_reason": finish}


def _chunk(*choices: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": list(choices), **more}


SHAPES: list[Any] = [
    _chunk(_choice({"content": "ab"})),
    _chunk(_choice({"content": ""})),
    _chunk(_choice({"content": None})),
    _chunk(_choice({"content": "x"}, finish="stop")),
    _chunk(_choice({}, finish="length")),
    _chunk(_choice({"content": "y"}), usage={"completion_tokens": 3}),
    _chunk(_choice({"content": "z"}), usage=None),
    _chunk(usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}),
    _chunk(_choice({"content": "q"}), _choice({"content": "r"}, index=1)),
    _chunk(_choice({"content": "r"}, index=1)),
    _chunk(_choice(None)),
    {"choices": [{"index": 0}]},
    _chunk(_choice({"reasoning_content": "think"})),
    _chunk(_choice({"reasoning": "think"})),
    _chunk(_choice({"content": "t", "reasoning_content": "both"})),
    _chunk(_choice({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]})),
    _chunk(_choice({"tool_calls": [{"index": 0, "function": {"arguments": '{"k": '}}]})),
    _chunk(_choice({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]})),
    _chunk(_choice({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g"}}]})),
    _chunk(_choice({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]})),
    _chunk(_choice({"tool_calls": [{"index": 0, "function": {"arguments": {"k": 1}}}]})),
    _chunk(_choice({"tool_calls": []})),
    _chunk(_choice({"content": "c", "tool_calls": [{"index": 0, "function": {"arguments": "x"}}]})),
    _chunk(_choice({"function_call": {"name": "h", "arguments": "{}"}})),
    _chunk(_choice({"content": "e"}), object="error"),
    {"object": "error", "message": "bad", "type": "BadRequestError", "code": 400},
    {"error": {"message": "overloaded", "type": "server_error"}},
    _chunk(_choice({"content": "o"}), object="something.else"),
    {"choices": [{"delta": {"content": "no index"}}]},
    [1, 2],
    "not json {",
    "",
    "[DONE]",
]


def _body(payloads: list[str]) -> bytes:
    return b"".join(b"data: " + payload.encode() + b"\n\n" for payload in payloads)


def _encoded(shape: Any) -> str:
    return shape if isinstance(shape, str) else json.dumps(shape)


def _full_decoder(payloads: list[str]) -> list[bytes]:
    mapper = OpenAIChatMapper()
    events = [event for payload in payloads for event in mapper.payload(payload.encode())]
    return normalized(events + mapper.finish())


def _hot_path(payloads: list[str], cuts: list[int]) -> list[bytes]:
    mapper = OpenAIChatMapper()
    body = _body(payloads)
    points = sorted({cut % (len(body) + 1) for cut in cuts})
    events: list[Event] = []
    for start, end in zip([0, *points], [*points, len(body)], strict=True):
        events += mapper.feed_bytes(body[start:end])
    return normalized(events + mapper.finish())


@settings(max_examples=examples(600), deadline=None)
@given(
    shapes=st.lists(st.sampled_from(SHAPES), max_size=14),
    cuts=st.lists(st.integers(0, 1 << 12), max_size=4),
)
def test_the_hot_path_reads_every_shape_as_the_full_decoder(
    shapes: list[Any], cuts: list[int]
) -> None:
    payloads = [json.dumps(FIRST), *map(_encoded, shapes)]
    assert _hot_path(payloads, cuts) == _full_decoder(payloads)


def test_each_shape_on_its_own_after_the_first_chunk() -> None:
    """Every shape, alone in mid-stream and then followed by text (the decoder goes on)."""
    for shape in SHAPES:
        payloads = [json.dumps(FIRST), _encoded(shape), json.dumps(SHAPES[0])]
        assert _hot_path(payloads, []) == _full_decoder(payloads), shape


def test_the_hot_path_is_taken_for_text_and_argument_pieces() -> None:
    """Guard the guard: text and argument continuations decode into the narrow Struct (else
    the property above compares the full decoder with itself)."""
    from toolwire.adapters.openai_chat import mapper as module

    seen: list[bytes] = []
    hot = module._decode_hot_chunk

    def spying(payload: bytes) -> Any:
        seen.append(payload)
        return hot(payload)

    module._decode_hot_chunk = spying
    try:
        payloads = [json.dumps(FIRST), *(_encoded(SHAPES[n]) for n in (0, 15, 16))]
        _hot_path(payloads, [])
    finally:
        module._decode_hot_chunk = hot
    assert len(seen) == 3
