"""The parts of a model turn as Gemini must get them back: in order, each with its signature.

Gemini 3 refuses a history whose ``functionCall`` parts lost their ``thoughtSignature``
("Function call is missing a thought_signature", HTTP 400), and Google asks for every signature
to be returned on the part it came with, parts neither merged across a signature nor split
(https://ai.google.dev/gemini-api/docs/thought-signatures). A signature may ride on a function
call (``function_call_thought_signature_gemini3.sse``), on a Vertex streamed call's header
(``vertex_stream_function_call_arguments_two_calls.sse``), on a thought part, or on an empty
text part at the end of a streamed answer (Vercel ai ``issue-18073`` recording).

:class:`ReplayLog` records, while the stream is read, the parts as they will be replayed:
consecutive text of one kind with no signature is joined, every signed part stays whole and
apart, and each call is named by toolwire's call id (its arguments come from the verdict at
replay time, never from here).

The mapper emits the log as a ``ProviderContent`` event before ``Finish`` (each part as a plain
JSON object), so it travels with the ``Turn`` (``Turn.provider_content``); :func:`recall` reads
it back. A turn without it (built by hand) is replayed without signatures (see :mod:`.history`
for the sentinel it then uses).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ...core.json_text import plain_str
from ...core.turn import Turn

__all__ = ["ReplayLog", "ReplayPart", "recall"]

PartKind = Literal["text", "reasoning", "call"]


class ReplayPart(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One part of the model turn to replay: text, reasoning (thought) text, or a call by id."""

    kind: PartKind
    text: str = ""
    call_id: str | None = None
    signature: str | None = None


class _Entry:
    __slots__ = ("call_id", "kind", "pieces", "signature")

    def __init__(
        self, kind: PartKind, text: str, call_id: str | None, signature: str | None
    ) -> None:
        self.kind = kind
        self.pieces = [text]
        self.call_id = call_id
        self.signature = None if signature is None else plain_str(signature)


class ReplayLog:
    """The parts of one turn, in order, built while reading. Private to one stream."""

    __slots__ = ("_entries", "_signed")

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._signed = False

    @property
    def signed(self) -> bool:
        """Some part carried a signature (only such turns need the log to be replayed)."""
        return self._signed

    def text(self, text: str, *, reasoning: bool, signature: str | None) -> None:
        """A text or thought (``reasoning``) part; an empty one matters only when signed."""
        kind: PartKind = "reasoning" if reasoning else "text"
        if signature is None:
            if not text:
                return
            last = self._entries[-1] if self._entries else None
            if last is not None and last.kind == kind and last.signature is None:
                last.pieces.append(text)
                return
        else:
            self._signed = True
        self._entries.append(_Entry(kind, text, None, signature))

    def plain_texts(self, pieces: list[str]) -> None:
        """Text parts with no signature, none empty, in order: :meth:`text` for each, at once."""
        last = self._entries[-1] if self._entries else None
        if last is not None and last.kind == "text" and last.signature is None:
            last.pieces += pieces
            return
        entry = _Entry("text", pieces[0], None, None)
        entry.pieces += pieces[1:]
        self._entries.append(entry)

    def call(self, call_id: str, signature: str | None) -> None:
        """A function call part (a whole call, or a streamed call's header)."""
        if signature is not None:
            self._signed = True
        self._entries.append(_Entry("call", "", call_id, signature))

    def sign_call(self, call_id: str, signature: str) -> None:
        """A signature on a later piece of a streamed call: kept if its header had none."""
        for entry in reversed(self._entries):
            if entry.kind == "call" and entry.call_id == call_id:
                if entry.signature is None:
                    entry.signature = signature
                    self._signed = True
                return

    def parts(self) -> tuple[ReplayPart, ...]:
        """The parts so far, frozen."""
        return tuple(
            ReplayPart(
                kind=entry.kind,
                text="".join(entry.pieces),
                call_id=entry.call_id,
                signature=entry.signature,
            )
            for entry in self._entries
        )


def recall(turn: Turn) -> tuple[ReplayPart, ...] | None:
    """The parts the stream of ``turn`` recorded (``Turn.provider_content``), if any."""
    if not turn.provider_content:
        return None
    try:
        return msgspec.convert(turn.provider_content, tuple[ReplayPart, ...])
    except msgspec.ValidationError:
        return None  # content of another provider's shape: replay from the Turn alone
