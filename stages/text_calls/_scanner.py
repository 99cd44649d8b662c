"""Where calls may stand in the turn's text, and how much of it is decided so far.

:func:`scan` walks the text once, left to right, and returns how far it is *decided*: every
character before that point is either ordinary text or inside a block a reader found; what is
after it may still become part of a call and is held. Ordinary text is everything outside a
family's markup, and markup is looked for only where it can be a call:

- not inside a code fence (```` ``` ```` at a line start, up to the closing fence), inline code
  (a backtick up to the next one or the line's end) or a ``<think>`` block (drafts, verl#4757);
- whole-reply readers only at the reply's first non-blank character (after a leading
  ``<think>`` block, when the reply opens with one);
- a ``tail_only`` block only when nothing but blanks and other blocks follow it to the end.

The scan is linear: openers are found by one compiled alternation, each reader reads from its
opener once, a block (or a :class:`Skip`) is stepped over whole, and a held tail is at most the
longest opener's length when no reader is reading.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from ._reading import NEED_MORE, Found, ReadContext, Skip, TextCallReader, _NeedMore, skip_blanks

__all__ = ["ReaderTable", "ScanState", "scan"]

TEXT, FENCE, CODE, THINK = 0, 1, 2, 3
_FENCE, _TICK, _THINK, _THINK_END = "```", "`", "<think>", "</think>"
_FENCE_CLOSE = re.compile(r"\n[ \t]*```")
_CODE_END = re.compile(r"`+|\n")
_TICKS = re.compile(r"`+")
#: Inline code whose end is in the text: its backtick run (one or two), then up to the next
#: run of backticks or the line's end (``_CODE_END``).
_INLINE_CODE = re.compile(r"``?+[^`\n]*+(?:`+|\n)")


class ScanState(msgspec.Struct, frozen=True, gc=False):
    """The scanner's state at the start of the held text."""

    mode: int = TEXT
    #: The next non-blank character starts the reply: whole-reply readers try it.
    reply_pending: bool = True
    #: The held text starts a line (a fence may open there).
    line_start: bool = True
    #: The reply starts again after the ``<think>`` block being read.
    reply_after_think: bool = False


class ReaderTable:
    """The chosen readers, compiled once: openers to readers, the whole-reply readers."""

    __slots__ = (
        "by_opener",
        "extendable",
        "first_chars",
        "longest",
        "pattern",
        "prefixes",
        "whole",
    )

    def __init__(self, readers: Sequence[TextCallReader]) -> None:
        by_opener: dict[str, list[TextCallReader]] = {}
        for reader in readers:
            for opener in reader.openers:
                by_opener.setdefault(opener, []).append(reader)
        self.by_opener = {key: tuple(value) for key, value in by_opener.items()}
        self.whole = tuple(reader for reader in readers if reader.whole_reply)
        tokens = {*by_opener, _FENCE, _TICK, _THINK}
        ordered = sorted(tokens, key=lambda token: (-len(token), token))
        self.pattern = re.compile("|".join(re.escape(token) for token in ordered))
        #: The characters that may start a token: text without any is ordinary at once.
        self.first_chars = frozenset(token[0] for token in tokens)
        self.prefixes = frozenset(token[:size] for token in tokens for size in range(1, len(token)))
        self.longest = max(len(token) for token in tokens)
        #: Tokens that are the start of a longer one (a backtick, a fence before ``tool_code``).
        self.extendable = frozenset(
            token for token in tokens if any(o != token and o.startswith(token) for o in tokens)
        )

    @property
    def empty(self) -> bool:
        """No reader at all."""
        return not self.by_opener and not self.whole

    def held_tail(self, text: str, start: int) -> int:
        """Where a possible token begins at the end of ``text`` (``len(text)`` if none)."""
        length = len(text)
        prefixes = self.prefixes
        for index in range(max(start, length - self.longest + 1), length):
            if text[index:] in prefixes:
                return index
        return length


def _think_end_tail(text: str, start: int) -> int:
    """Where a possible ``</think>`` begins at the end of ``text``."""
    for index in range(max(start, len(text) - len(_THINK_END) + 1), len(text)):
        if _THINK_END.startswith(text[index:]):
            return index
    return len(text)


def _line_start(text: str, index: int, state: ScanState) -> bool:
    return text[index - 1] == "\n" if index else state.line_start


def _read_at(
    table: ReaderTable, text: str, at: int, token: str, context: ReadContext
) -> Found | Skip | _NeedMore | None:
    waiting = False
    for reader in table.by_opener.get(token, ()):
        result = reader.read(text, at, context)
        if isinstance(result, Found):
            return msgspec.structs.replace(result, family=reader.family)
        if result is NEED_MORE:
            waiting = True
        elif isinstance(result, Skip) and not waiting:
            return result
    return NEED_MORE if waiting else None


def _block_at(
    table: ReaderTable, text: str, at: int, context: ReadContext
) -> Found | _NeedMore | None:
    """A block that starts exactly at ``at`` (the tail of a chain of blocks)."""
    match = table.pattern.match(text, at)
    if match is None:
        rest = text[at : at + table.longest]
        if not context.final and rest in table.prefixes:
            return NEED_MORE
        return None
    token = match.group()
    if token not in table.by_opener:
        return None
    result = _read_at(table, text, at, token, context)
    return result if isinstance(result, Found | _NeedMore) else None


class Scanned(msgspec.Struct, frozen=True, gc=False):
    """What :func:`scan` decided: ``text[:decided]`` is final, with ``blocks`` inside it."""

    decided: int
    blocks: tuple[Found, ...]
    state: ScanState


def scan(table: ReaderTable, text: str, state: ScanState, context: ReadContext) -> Scanned:
    """Decide as much of ``text`` as can be decided (all of it when ``context.final``)."""
    final = context.final
    length = len(text)
    mode = state.mode
    reply_pending = state.reply_pending
    reply_after_think = state.reply_after_think
    accepted: list[Found] = []
    chain: list[Found] = []
    chain_state = state
    position = 0

    def stop(decided: int, at_state: ScanState | None = None) -> Scanned:
        if at_state is None:
            at_state = ScanState(
                mode=mode,
                reply_pending=reply_pending,
                line_start=_line_start(text, decided, state),
                reply_after_think=reply_after_think,
            )
        return Scanned(decided, tuple(accepted), at_state)

    while True:
        if chain:
            after = skip_blanks(text, position)
            if after >= length:
                if final:
                    accepted.extend(chain)
                    return stop(length)
                return Scanned(chain[0].start, tuple(accepted), chain_state)
            block = _block_at(table, text, after, context)
            if block is NEED_MORE:
                return Scanned(chain[0].start, tuple(accepted), chain_state)
            if isinstance(block, Found):
                chain.append(block)
                position = block.end
                continue
            # Prose follows: the blocks that count only at the tail are text after all.
            accepted.extend(found for found in chain if not found.tail_only)
            chain = []
            position = after
        if mode == TEXT:
            if reply_pending:
                start = skip_blanks(text, position)
                if start >= length:
                    return stop(length if final else position)
                if text.startswith(_THINK, start):
                    mode, reply_after_think, position = THINK, True, start + len(_THINK)
                    continue
                waiting = False
                found: Found | None = None
                for reader in table.whole:
                    result = reader.read(text, start, context)
                    if isinstance(result, Found):
                        found = msgspec.structs.replace(result, family=reader.family)
                        break
                    waiting = waiting or result is NEED_MORE
                if found is None and waiting:
                    return stop(start)
                if found is None and not final and _THINK.startswith(text[start:]):
                    return stop(start)
                chain_state = ScanState(
                    reply_pending=True, line_start=_line_start(text, start, state)
                )
                reply_pending = False
                if found is not None:
                    chain = [found]
                    position = found.end
                    continue
                position = start
            match = table.pattern.search(text, position)
            if match is None:
                return stop(length if final else table.held_tail(text, position))
            token, at = match.group(), match.start()
            if not final and match.end() == length and token in table.extendable:
                return stop(at)  # the token may still grow into a longer one
            if token == _TICK:
                # Inline code (one or two backticks: three would be the fence token), the
                # commonest token of markdown: stepped over in one match when its end is here,
                # as the branch below and the CODE branch would on two turns of the loop.
                code = _INLINE_CODE.match(text, at)
                if code is not None:
                    position = code.end()
                    continue
            if token in (_FENCE, _TICK) or (
                token.startswith(_FENCE) and not _line_start(text, at, state)
            ):
                run = _TICKS.match(text, at)
                assert run is not None
                if not final and run.end() == length:
                    return stop(at)  # a backtick run that may still grow into a fence
                fence = run.end() - at >= len(_FENCE) and _line_start(text, at, state)
                mode, position = (FENCE if fence else CODE), run.end()
                continue
            if token == _THINK:
                mode, position = THINK, match.end()
                continue
            result = _read_at(table, text, at, token, context)
            if result is NEED_MORE:
                return stop(at)
            if isinstance(result, Found):
                if result.tail_only:
                    chain = [result]
                    chain_state = ScanState(line_start=_line_start(text, at, state))
                else:
                    accepted.append(result)
                position = result.end
            elif isinstance(result, Skip):
                position = max(result.resume, match.end())
            else:
                position = match.end()
        elif mode == FENCE:
            if position == 0 and state.line_start and text.startswith(_FENCE):
                close_end = len(_FENCE)
            else:
                close = _FENCE_CLOSE.search(text, max(position - 1, 0))
                if close is None:
                    if final:
                        return stop(length)
                    tail = text.rfind("\n", max(position, length - 8))
                    hold = tail if tail >= 0 and text[tail:].rstrip(" \t`") == "\n" else length
                    return stop(hold)
                close_end = close.end()
            mode, position = TEXT, close_end
        elif mode == CODE:
            end = _CODE_END.search(text, position)
            if end is None:
                return stop(length)
            mode, position = TEXT, end.end()
        else:  # THINK
            close_at = text.find(_THINK_END, position)
            if close_at < 0:
                return stop(length if final else _think_end_tail(text, position))
            mode, position = TEXT, close_at + len(_THINK_END)
            if reply_after_think:
                reply_pending, reply_after_think = True, False
