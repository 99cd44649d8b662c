"""Every recorded Responses stream replays to the values read from the file itself.

The expected values were written by reading each recording (joining its
``response.function_call_arguments.delta`` pieces and usage fields by hand, cross-checked with
the standard-library ``json`` below), not copied from toolwire's output. The same streams are
fed as ``openai`` SDK Responses event objects and must give the same turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, get_args

import _recorded_turns as recorded
import msgspec
import pytest
from _recorded_turns import Call, ExpectedTurn
from _toolwire_testdata import STREAMS, aiter_items, json_chunks, load_stream
from openai.types.responses import ResponseStreamEvent
from pydantic import BaseModel, TypeAdapter, ValidationError

import toolwire
from toolwire.adapters.openai_responses import PROVIDERS, ResponsesOutputItem, output_items
from toolwire.core.turn import Turn
from toolwire.testing import check_mapper

pytestmark = pytest.mark.anyio

PROVIDER = "openai-responses"
FOLDER = "openai-responses"


def responses_recordings() -> list[str]:
    found = [
        f"{FOLDER}/{p.name}" for p in sorted((STREAMS / FOLDER).iterdir()) if p.suffix == ".sse"
    ]
    assert found
    return found


RECORDINGS = responses_recordings()


@dataclass(frozen=True, kw_only=True)
class Expected(ExpectedTurn):
    response_id: str
    finish_raw: str | None = "completed"
    #: (input, output, total, reasoning) tokens.
    usage: tuple[int | None, ...] | None = None
    #: (output_index, item type, item id, call id, status) of every finished output item.
    items: tuple[tuple[int, str, str, str | None, str | None], ...] = ()


GPT5_TEXT = "I\u2019ll check the capital lookup tool for \u201cPotatoLand.\u201d"
GPT5_REASONING_ID = "rs_0fabc13af1ee0049006a691dfe60b081a1baa444d3cf19afba"
GPT5_MESSAGE_ID = "msg_0fabc13af1ee0049006a691dfebdc881a1ae18d027c313d8ce"
GPT5_CALL_ITEM_ID = "fc_0fabc13af1ee0049006a691dff0c1481a1b4a0eec7e3c753bb"
GPT5_CALL_ID = "call_LabG58Uhrq9kZvR52BYKjToD"
SEQ_FIRST_REASONING_ID = "rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405"
LMSTUDIO_REASONING = (
    "The user is asking for the weather in San Francisco. I have a weather function available "
    'that takes a location parameter. The user has provided "San Francisco" as the location, '
    "so I have all the required information to make the function call."
)

EXPECTED: dict[str, Expected] = {
    # Azure: sequence_number as the 2nd key, obfuscation on deltas, content_filters.
    f"{FOLDER}/function_call_azure_gpt51.sse": Expected(
        model="gpt-5.1",
        response_id="resp_04041325ab8ae30400698c519fb7fc81979972618138fc336d",
        calls=(
            Call("call_H5DxLSFnsGhiROnUiDHmgyc8", "weather", 0, '{"location":"San Francisco"}'),
        ),
        usage=(45, 24, 69, 0),
        items=(
            (
                0,
                "function_call",
                "fc_04041325ab8ae30400698c51c5468c8197a395f18875a5339f",
                "call_H5DxLSFnsGhiROnUiDHmgyc8",
                "completed",
            ),
        ),
    ),
    # March 2025 wire format: no sequence_number anywhere.
    f"{FOLDER}/function_call_gpt4o_2025_03_no_sequence_number.sse": Expected(
        model="gpt-4o-2024-08-06",
        response_id="resp_67e554a155508191900ee113293c4c830794405d35281ae2",
        calls=(Call("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", 0, '{"country":"France"}'),),
        usage=(255, 16, 271, 0),
        items=(
            (
                0,
                "function_call",
                "fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2",
                "call_kL0PCQV7M2WMoVX8V8OtYSAL",
                "completed",
            ),
        ),
    ),
    # The budget ran out during reasoning: no call, no text, the limit named by the provider.
    f"{FOLDER}/incomplete_max_output_tokens_during_reasoning.derived.sse": Expected(
        model="gpt-5-2025-08-07",
        response_id="resp_0050471a34b36ae60068c97b94a480819587a9d70cf2979b33",
        stop="length",
        finish_raw="max_output_tokens",
        truncated=True,
        evidence=("finish_reason",),
        usage=(53, 256, 309, 256),
        cut_by="token_limit",
        items=((0, "reasoning", SEQ_FIRST_REASONING_ID, None, None),),
    ),
    # Cut at max_output_tokens inside the call: item status incomplete, response.incomplete.
    f"{FOLDER}/incomplete_max_output_tokens_mid_function_call.derived.sse": Expected(
        model="gpt-5.5-2026-04-23",
        response_id="resp_0fabc13af1ee0049006a691dfdab8881a1a75f2db7ff78cb83",
        text=GPT5_TEXT,
        calls=(Call(GPT5_CALL_ID, "get_capital", 0, '{"country":"Pot', True),),
        stop="length",
        finish_raw="max_output_tokens",
        truncated=True,
        evidence=("finish_reason", "arguments_unterminated"),
        usage=(63, 64, 127, 26),
        cut_by="token_limit",
        items=(
            (0, "reasoning", GPT5_REASONING_ID, None, None),
            (1, "message", GPT5_MESSAGE_ID, None, "completed"),
            (2, "function_call", GPT5_CALL_ITEM_ID, GPT5_CALL_ID, "incomplete"),
        ),
    ),
    # LM Studio: reasoning_text deltas, logprobs, NO function_call_arguments.delta at all.
    f"{FOLDER}/lmstudio_local_reasoning_text_call_no_arg_deltas.sse": Expected(
        model="zai-org/glm-4.7-flash",
        response_id="resp_cc7bfe18e2f2eca93006515c0fd19cfed16e46a93a60444a",
        text="I'll get the current weather information for San Francisco for you.",
        reasoning=LMSTUDIO_REASONING,
        calls=(Call("call_2025306790300011", "weather", 0, '{"location":"San Francisco"}'),),
        usage=(182, 61, 243, 48),
        items=(
            (0, "reasoning", "rs_3yo6zy4vu4hq6iegqwhn1", None, "completed"),
            (1, "message", "msg_y4g4x99xneifrr153t0y4g", None, "completed"),
            (
                2,
                "function_call",
                "fc_z9synwu0kvc33k6e9u3dq4",
                "call_2025306790300011",
                "completed",
            ),
        ),
    ),
    # Full lifecycle, sequence_number last, encrypted reasoning, phase "commentary" message.
    f"{FOLDER}/reasoning_text_function_call_gpt5.sse": Expected(
        model="gpt-5.5-2026-04-23",
        response_id="resp_0fabc13af1ee0049006a691dfdab8881a1a75f2db7ff78cb83",
        text=GPT5_TEXT,
        calls=(Call(GPT5_CALL_ID, "get_capital", 0, '{"country":"PotatoLand"}'),),
        usage=(63, 69, 132, 26),
        items=(
            (0, "reasoning", GPT5_REASONING_ID, None, None),
            (1, "message", GPT5_MESSAGE_ID, None, "completed"),
            (2, "function_call", GPT5_CALL_ITEM_ID, GPT5_CALL_ID, "completed"),
        ),
    ),
    # sequence_number as the 2nd key; reasoning without summary events.
    f"{FOLDER}/reasoning_then_function_call_seq_first.sse": Expected(
        model="gpt-5-2025-08-07",
        response_id="resp_0050471a34b36ae60068c97b94a480819587a9d70cf2979b33",
        calls=(Call("call_CWXgs68YprAjp6t0371hiPOI", "final_result", 0, '{"result":6666}'),),
        usage=(53, 469, 522, 448),
        items=(
            (0, "reasoning", SEQ_FIRST_REASONING_ID, None, None),
            (
                1,
                "function_call",
                "fc_0050471a34b36ae60068c97bf19d9c819590eaf42c0edc1042",
                "call_CWXgs68YprAjp6t0371hiPOI",
                "completed",
            ),
        ),
    ),
}


def test_every_recording_has_expectations() -> None:
    assert sorted(EXPECTED) == RECORDINGS


@pytest.mark.parametrize("name", RECORDINGS)
def test_expected_values_match_the_files_read_with_json(name: str) -> None:
    # Cross-check of the hand-written literals with the standard library.
    payloads = json_chunks(load_stream(name))
    expected = EXPECTED[name]
    for call in expected.calls:
        added = [
            p
            for p in payloads
            if p["type"] == "response.output_item.added"
            and p["item"].get("call_id") == call.call_id
        ]
        (header,) = added
        item_id = header["item"]["id"]
        deltas = [
            p["delta"]
            for p in payloads
            if p["type"] == "response.function_call_arguments.delta" and p["item_id"] == item_id
        ]
        (done,) = [
            p["arguments"]
            for p in payloads
            if p["type"] == "response.function_call_arguments.done" and p["item_id"] == item_id
        ]
        assert done == call.raw
        assert "".join(deltas) in ("", call.raw)
        if call.truncated:
            with pytest.raises(json.JSONDecodeError):
                json.loads(call.raw)
        else:
            assert isinstance(json.loads(call.raw), dict)
    terminal = payloads[-1]
    assert terminal["type"] in ("response.completed", "response.incomplete")
    usage = terminal["response"]["usage"]
    assert expected.usage == (
        usage["input_tokens"],
        usage["output_tokens"],
        usage["total_tokens"],
        usage["output_tokens_details"]["reasoning_tokens"],
    )
    text = "".join(p["delta"] for p in payloads if p["type"] == "response.output_text.delta")
    assert text == expected.text


def test_lmstudio_sends_no_argument_deltas() -> None:
    # The quirk the recording is kept for: the arguments arrive only whole.
    payloads = json_chunks(
        load_stream(f"{FOLDER}/lmstudio_local_reasoning_text_call_no_arg_deltas.sse")
    )
    types = {p["type"] for p in payloads}
    assert "response.function_call_arguments.delta" not in types
    assert "response.function_call_arguments.done" in types


def assert_turn(turn: Turn, expected: Expected) -> None:
    assert turn.text == expected.text
    assert turn.reasoning == expected.reasoning
    assert recorded.call_rows(turn) == recorded.expected_rows(expected.calls)
    assert not any(c.id_synthesized for c in turn.calls)
    recorded.assert_finish(turn, expected)
    assert turn.cut_by == expected.cut_by
    assert turn.usage is not None
    assert recorded.usage_row(turn.usage) == expected.usage
    assert turn.errors == ()
    assert turn.model == expected.model
    assert turn.response_id == expected.response_id
    assert turn.provider == "openai"


@pytest.mark.parametrize("name", RECORDINGS)
async def test_recording_bytes_replay(name: str) -> None:
    turn = await toolwire.collect(load_stream(name), PROVIDER, judge=False)
    assert_turn(turn, EXPECTED[name])
    assert all(c.verdict is None for c in turn.calls)


@pytest.mark.parametrize("name", RECORDINGS)
@pytest.mark.parametrize("read_size", [1, 7, 64, 65536])
async def test_recording_as_async_reads(name: str, read_size: int) -> None:
    reads = recorded.in_reads(load_stream(name), read_size)
    turn = await toolwire.collect(aiter_items(reads), PROVIDER, judge=False)
    assert_turn(turn, EXPECTED[name])


JUDGED: dict[str, list[tuple[str, str | None]]] = {
    f"{FOLDER}/incomplete_max_output_tokens_mid_function_call.derived.sse": [
        ("rejected", "truncated")
    ],
}


@pytest.mark.parametrize("name", RECORDINGS)
async def test_recording_judged(name: str) -> None:
    turn = await toolwire.collect(load_stream(name), PROVIDER)
    expected = EXPECTED[name]
    outcomes = [(c.outcome, c.verdict.reason if c.verdict else None) for c in turn.calls]
    assert outcomes == JUDGED.get(name, [("ok", None)] * len(expected.calls))
    for call, want in zip(turn.calls, expected.calls, strict=True):
        if call.outcome == "ok":
            assert call.arguments == json.loads(want.raw)
        else:
            assert call.arguments is None
            assert call.verdict is not None
            assert call.verdict.message
    assert turn.stop_reason == expected.stop


async def test_the_cut_call_is_blamed_on_the_limit_with_the_usage() -> None:
    name = f"{FOLDER}/incomplete_max_output_tokens_mid_function_call.derived.sse"
    request = {"model": "gpt-5.5", "input": "hi", "max_output_tokens": 64, "stream": True}
    turn = await toolwire.collect(load_stream(name), PROVIDER, request=request)
    assert turn.truncation_evidence == (
        "finish_reason",
        "usage_at_max_tokens",
        "arguments_unterminated",
    )
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.message is not None
    assert "output-token limit" in call.verdict.message


@pytest.mark.parametrize("name", RECORDINGS)
async def test_recording_event_sequence(name: str) -> None:
    """Started once per call, before its deltas; complete once; Finish then StreamEnd last."""
    events = [e async for e in toolwire.stream(load_stream(name), PROVIDER, judge=False)]
    expected = EXPECTED[name]
    recorded.assert_stream_ends(events, terminated=True)  # the terminal event is in every file
    started, complete = recorded.started_and_complete(events)
    assert [e.call_id for e in started] == [c.call_id for c in expected.calls]
    assert [e.call_id for e in complete] == [c.call_id for c in expected.calls]
    for call in expected.calls:
        assert recorded.joined_deltas(events, call.call_id) == call.raw
    for event in complete:
        # A completed item closes its call at once; an incomplete one is closed by the finish.
        assert event.closed_by == ("finish" if event.truncated else "call_end")


@pytest.mark.parametrize("name", RECORDINGS)
async def test_recording_output_items(name: str) -> None:
    events = [e async for e in toolwire.stream(load_stream(name), PROVIDER, judge=False)]
    items = output_items(events)
    assert [(i.position, i.item_type, i.item_id, i.call_id, i.status) for i in items] == list(
        EXPECTED[name].items
    )
    for item in items:
        fields = json.loads(item.item)
        assert fields["id"] == item.item_id
        assert "arguments" not in fields  # function-call arguments are never replayed raw


async def test_reasoning_items_are_kept_byte_for_byte() -> None:
    name = f"{FOLDER}/reasoning_text_function_call_gpt5.sse"
    events = [e async for e in toolwire.stream(load_stream(name), PROVIDER)]
    reasoning = next(i for i in output_items(events) if i.item_type == "reasoning")
    done = next(
        p
        for p in json_chunks(load_stream(name))
        if p["type"] == "response.output_item.done" and p["item"]["type"] == "reasoning"
    )
    assert json.loads(reasoning.item) == done["item"]
    assert reasoning.item in load_stream(name).decode()  # the very bytes that came


@pytest.mark.parametrize("name", RECORDINGS)
def test_check_mapper(name: str) -> None:
    check_mapper(PROVIDERS[PROVIDER].open_mapper, load_stream(name))


# -- the openai SDK object path ---------------------------------------------------------------

_STREAM_EVENTS: Any = TypeAdapter(ResponseStreamEvent)
_BY_TYPE: dict[str, type[BaseModel]] = {
    get_args(cls.model_fields["type"].annotation)[0]: cls
    for cls in get_args(get_args(ResponseStreamEvent)[0])
}


def sdk_events(name: str) -> list[BaseModel]:
    """The recording as the SDK gives it to users.

    The SDK builds stream events with its lenient ``construct`` (strict validation is off by
    default; these recordings lack fields the newest types require, such as
    ``cache_write_tokens``); strict validation is used whenever it accepts the event.
    """
    events = []
    for data in json_chunks(load_stream(name)):
        try:
            events.append(_STREAM_EVENTS.validate_python(data))
        except ValidationError:
            events.append(_BY_TYPE[data["type"]].construct(**data))
    return events


@pytest.mark.parametrize("name", RECORDINGS)
async def test_sdk_objects_give_the_same_turn(name: str) -> None:
    from_bytes = await toolwire.collect(load_stream(name), PROVIDER)
    from_objects = await toolwire.collect(aiter_items(sdk_events(name)), PROVIDER)
    # The recorded items' JSON keeps each source's key order; they are compared item by item in
    # test_sdk_objects_give_the_same_output_items.
    assert msgspec.structs.replace(from_objects, provider_content=()) == msgspec.structs.replace(
        from_bytes, provider_content=()
    )
    assert len(from_objects.provider_content) == len(from_bytes.provider_content)
    assert_turn(await toolwire.collect(sdk_events(name), PROVIDER, judge=False), EXPECTED[name])


@pytest.mark.parametrize("name", RECORDINGS)
async def test_sdk_objects_give_the_same_output_items(name: str) -> None:
    from_bytes = output_items([e async for e in toolwire.stream(load_stream(name), PROVIDER)])
    from_objects = output_items([e async for e in toolwire.stream(sdk_events(name), PROVIDER)])
    assert [(i.position, i.item_type, i.item_id, i.call_id) for i in from_objects] == [
        (i.position, i.item_type, i.item_id, i.call_id) for i in from_bytes
    ]
    assert [json.loads(i.item) for i in from_objects] == [json.loads(i.item) for i in from_bytes]


def test_strict_sdk_validation_is_used_where_it_applies() -> None:
    # The object test above must not be all "construct": real validated objects go through too.
    events = sdk_events(f"{FOLDER}/reasoning_text_function_call_gpt5.sse")
    assert all(_STREAM_EVENTS.validate_python(e.model_dump()) for e in events)


async def test_decoded_json_mappings_are_accepted_as_objects() -> None:
    name = f"{FOLDER}/function_call_azure_gpt51.sse"
    turn = await toolwire.collect(
        aiter_items(json_chunks(load_stream(name))), PROVIDER, judge=False
    )
    assert_turn(turn, EXPECTED[name])


def test_output_item_event_encodes_with_its_own_tag() -> None:
    item = ResponsesOutputItem(
        position=2, item_type="reasoning", item_id="rs_1", item='{"id":"rs_1"}'
    )
    assert toolwire.core.events.encode_event(item).startswith(
        b'{"type":"openai_responses.output_item"'
    )
