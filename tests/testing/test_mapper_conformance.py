"""Every adapter passes the mapper conformance kit on every recording of its provider."""

from __future__ import annotations

import pytest
from _toolwire_testdata import STREAMS, every_recording

from toolwire.adapters.registry import provider
from toolwire.testing import check_mapper

CASES = every_recording()


@pytest.mark.parametrize(("recording", "name"), CASES)
def test_adapter_passes_the_kit(recording: str, name: str) -> None:
    check_mapper(provider(name).open_mapper, (STREAMS / recording).read_bytes())


def test_the_kit_catches_an_adapter_that_runs_a_cut_call() -> None:
    from toolwire.adapters.openai_chat import OpenAIChatMapper
    from toolwire.core.mapper import MapperSettings

    class Trusting(OpenAIChatMapper):
        """Forgets that a stream with no finish was cut: the open call looks complete."""

        def finish(self, *, failed: bool = False) -> list:  # type: ignore[override, type-arg]
            self._facts.terminated = True
            self._facts.raw = self._facts.raw or "tool_calls"
            return super().finish(failed=failed)

    body = (STREAMS / "openai-chat/single_call_long_nested_arguments.sse").read_bytes()
    with pytest.raises(AssertionError, match="cut_anywhere"):
        check_mapper(lambda settings: Trusting(settings), body)
    assert MapperSettings() == MapperSettings()
