"""Where calls may stand in the turn's text, and how much of it is decided so far.

:func:`scan` walks the text once, left to right, and returns how far it is *decided*: every
character before that point is either ordinary text or inside a block a reader found; what is
after it may still become part of a call and is held. Ordinary text is everything outside a
family's markup, and markup is looked for only where it can be a call:

- not inside a code fence (```` ``` ```` at a line start, up to the closing fence), inline code
  (a backtick up to the next one or the line's end) or reasoning (``<think>``, ``[THINK]``...:
  every wrapper of ``reasoning.py``; a call there is a draft, verl#4757). A closer with no
  opener before it ends reasoning the prompt opened: the blocks found before it are drafts,
  reported in :attr:`Scanned.releases`. After an implicit end (``reasoning.py``) blocks count
  only at the tail;
- whole-reply readers only at the reply's first non-blank character (after a leading
  reasoning block, when the reply opens with one, or after a closer with no opener);
- a ``tail_only`` block only when nothing but blanks and other blocks follow it to the end.

The scan is linear: openers are found by one compiled alternation, each reader reads from its
opener once, a block (or a :class:`Skip`) is stepped over whole, and a held tail is at most the
longest opener's length when no reader is reading. The alternation is a trie (:func:`trie_pattern`):
with some eighty tokens, about sixty of them starting with ``<``, a flat alternation tried every
one of them at each ``<`` of ordinary text. Complete inline code, the commonest token of
markdown, is found by the same search as the tokens and stepped over at once
(``ReaderTable.text_search``), not in two turns of the scanner's loop.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import msgspec

from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    Skip,
    TextCallReader,
    _NeedMore,
    grows_into,
    skip_blanks,
)
from .reasoning import REASONING

__all__ = ["ReaderTable", "ScanState", "scan", "trie_pattern"]

TEXT, FENCE, CODE, THINK = 0, 1, 2, 3
_FENCE, _TICK = "```", "`"
_FENCE_CLOSE = re.compile(r"\n[ \t]*```")
_CODE_END = re.compile(r"`+|\n")
_TICKS = re.compile(r"`+")
#: Inline code whose end is in the text: a backtick run of one or two (three are the fence
#: token), then up to the next run of backticks or the line's end (``_CODE_END``). Tried before
#: the tokens in ``ReaderTable.text_search``; its empty group marks a match as inline code.
_INLINE_CODE = r"`(?!``)()`?+[^`\n]*+(?:`+|\n)"


def trie_pattern(tokens: Iterable[str]) -> str:
    """A regular expression matching the longest of ``tokens`` that starts where it is tried.

    The same matches as a flat alternation ordered longest first, written as a trie
    (``<(?:tool_call(?:s)?>|think>|...)``): at each character only the branches that may still
    match are tried, and the regular-expression engine's check of a branch's first character
    rejects the others at once. At a node that ends a token, the longer branches come first.
    """
    parts, ends = _trie_branches(tokens)
    if not parts:
        return ""
    if len(parts) == 1 and not ends:
        return parts[0]
    return "(?:" + "|".join(parts) + ")" + ("?" if ends else "")


def _trie_branches(tokens: Iterable[str]) -> tuple[list[str], bool]:
    """The trie's branches, one per first character, and whether the empty token is there."""
    branches: dict[str, list[str]] = {}
    ends = False
    for token in sorted(set(tokens)):
        if token:
            branches.setdefault(token[0], []).append(token[1:])
        else:
            ends = True
    parts = []
    for first, rests in branches.items():
        prefix = first
        while len(rests) == 1 and rests[0]:  # a single chain: one literal
            prefix, rests = prefix + rests[0][0], [rests[0][1:]]
        parts.append(re.escape(prefix) + trie_pattern(rests))
    return parts, ends


class ScanState(msgspec.Struct, frozen=True, gc=False):
    """The scanner's state at the start of the held text."""

    mode: int = TEXT
    #: The next non-blank character starts the reply: whole-reply readers try it.
    reply_pending: bool = True
    #: The held text starts a line (a fence may open there).
    line_start: bool = True
    #: The reply starts again after the reasoning block being read.
    reply_after_think: bool = False
    #: In ``THINK`` mode, the reasoning wrapper open (its index in ``REASONING_WRAPPERS``;
    #: 0 is ``<think>``).
    wrapper: int = 0
    #: An implicit end closed the reasoning: blocks count only at the tail, and a closer that
    #: comes later makes them drafts (``reasoning.py``).
    ended_early: bool = False


class ReaderTable:
    """The chosen readers, compiled once: openers to readers, the whole-reply readers."""

    __slots__ = (
        "by_opener",
        "extendable",
        "first_chars",
        "longest",
        "pattern",
        "prefixes",
        "shorter",
        "starts",
        "tail",
        "text_search",
        "whole",
    )

    def __init__(self, readers: Sequence[TextCallReader]) -> None:
        by_opener: dict[str, list[TextCallReader]] = {}
        for reader in readers:
            for opener in reader.openers:
                by_opener.setdefault(opener, []).append(reader)
        self.by_opener = {key: tuple(value) for key, value in by_opener.items()}
        self.whole = tuple(reader for reader in readers if reader.whole_reply)
        tokens = {*by_opener, _FENCE, _TICK, *REASONING.tokens}
        #: The longest token at a place (``match``), or the first token on (``search``).
        self.pattern = re.compile(trie_pattern(tokens))
        #: In text mode, the first complete inline code or token on (inline code has group 1).
        #: One alternation whose branches all start with a literal, so that the engine skips
        #: the characters that start none of them.
        self.text_search = re.compile("|".join([_INLINE_CODE, *_trie_branches(tokens)[0]]))
        #: The characters that may start a token: text without any is ordinary at once.
        self.first_chars = frozenset(token[0] for token in tokens)
        #: Any character of :attr:`first_chars`.
        self.starts = re.compile("[" + re.escape("".join(sorted(self.first_chars))) + "]")
        self.prefixes = frozenset(token[:size] for token in tokens for size in range(1, len(token)))
        #: A token's beginning that ends the text (what :meth:`held_tail` looks for).
        self.tail = re.compile(f"(?:{trie_pattern(self.prefixes)})\\Z")
        self.longest = max(len(token) for token in tokens)
        #: Tokens that are the start of a longer one (a backtick, a fence before ``tool_code``).
        self.extendable = frozenset(
            token for token in tokens if any(o != token and o.startswith(token) for o in tokens)
        )
        #: A reasoning opener -> the longest reader opener it starts with (harmony's
        #: ``<|channel|>``), read there when the opener opens nothing (``not_after``).
        self.shorter = {
            opener: max(starts, key=len)
            for opener in REASONING.openers
            if (starts := [token for token in by_opener if opener.startswith(token)])
        }

    @property
    def empty(self) -> bool:
        """No reader at all."""
        return not self.by_opener and not self.whole

    def ordinary_end(self, text: str, start: int) -> int:
        """Up to where :func:`scan`, from ``start`` in text mode (outside reasoning, past the
        reply's start, no block held), decides ``text`` as ordinary text: its first token that
        is not complete inline code, or the beginning of one at its end, or ``len(text)``.
        The same search as the scan's, so that the stage passes the ordinary text of a batch
        (markdown with ``<``, ``[`` or inline code in it) without a scan, and scans from there."""
        match, start = self.next_token(text, start)
        return match.start() if match is not None else self.held_tail(text, start)

    def next_token(self, text: str, start: int) -> tuple[re.Match[str] | None, int]:
        """The first token in text mode at or after ``start`` that is not complete inline code
        (the commonest token of markdown, stepped over), and where the search stood then (past
        the last inline code stepped over)."""
        search = self.text_search.search
        match = search(text, start)
        while match is not None and match.lastindex:  # complete inline code
            start = match.end()
            match = search(text, start)
        return match, start

    def held_tail(self, text: str, start: int) -> int:
        """Where a possible token begins at the end of ``text`` (``len(text)`` if none)."""
        length = len(text)
        found = self.tail.search(text, max(start, length - self.longest + 1))
        return length if found is None else found.start()


def _line_start(text: str, index: int, state: ScanState) -> bool:
    return text[index - 1] == "\n" if index else state.line_start


def with_end_tokens(
    reader: TextCallReader, found: Found, text: str, final: bool
) -> Found | _NeedMore:
    """``found`` with the family's end-of-turn tokens written right after it (blanks between
    allowed) taken into its markup; :data:`NEED_MORE` while the text may still grow into one.

    A server that does not stop on the token leaves it as text (``<|im_end|>`` after a
    ``</tool_call>``): it ends the turn, so it is no text after the block, and the block was
    ended by the model (``closed``), not cut.
    """
    found = msgspec.structs.replace(found, family=reader.family)
    tokens = reader.end_tokens
    if not tokens:
        return found
    end = found.end
    while True:
        at = skip_blanks(text, end)
        if at >= len(text):
            return found if final else NEED_MORE
        token = next((token for token in tokens if text.startswith(token, at)), None)
        if token is None:
            break
        end = at + len(token)
        # The model ended its turn there: the block was not cut, whatever ended the stream.
        found = msgspec.structs.replace(found, end=end, closed=True)
    if not final and grows_into(text[at:], tokens):
        return NEED_MORE
    return found


def _read_at(
    table: ReaderTable, text: str, at: int, token: str, context: ReadContext
) -> Found | Skip | _NeedMore | None:
    waiting = False
    for reader in table.by_opener.get(token, ()):
        result = reader.read(text, at, context)
        if isinstance(result, Found):
            return with_end_tokens(reader, result, text, context.final)
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
    #: Where closers with no opener before them stand: every block before one (found in this
    #: scan or earlier) was drafted in reasoning and is text after all.
    releases: tuple[int, ...] = ()


def scan(table: ReaderTable, text: str, state: ScanState, context: ReadContext) -> Scanned:
    """Decide as much of ``text`` as can be decided (all of it when ``context.final``)."""
    final = context.final
    length = len(text)
    mode = state.mode
    reply_pending = state.reply_pending
    reply_after_think = state.reply_after_think
    wrapper = state.wrapper
    ended_early = state.ended_early
    releases: list[int] = []
    accepted: list[Found] = []
    #: Blocks one after the other (blanks between), the last one read; held until what
    #: follows them is known.
    chain: list[Found] = []
    chain_state = state
    #: ``chain[0]`` is a whole reply: it counts only when nothing but blocks follows it.
    chain_whole = False
    #: Every block from the first tail-only block that prose followed: they count together
    #: or not at all, decided at the reply's end (``docs/text-calls.md``, "Several calls").
    pending: list[Found] = []
    pending_state = state
    position = 0

    def held(start: int, at_state: ScanState) -> Scanned:
        if pending:
            return Scanned(pending[0].start, tuple(accepted), pending_state, tuple(releases))
        return Scanned(start, tuple(accepted), at_state, tuple(releases))

    def stop(decided: int, at_state: ScanState | None = None) -> Scanned:
        if pending:
            if not final:
                return Scanned(pending[0].start, tuple(accepted), pending_state, tuple(releases))
            # The reply ends in prose: the blocks that count only at the tail are text.
            accepted.extend(found for found in pending if not found.tail_only)
            pending.clear()
        if at_state is None:
            at_state = ScanState(
                mode=mode,
                reply_pending=reply_pending,
                line_start=_line_start(text, decided, state),
                reply_after_think=reply_after_think,
                wrapper=wrapper,
                ended_early=ended_early,
            )
        return Scanned(decided, tuple(accepted), at_state, tuple(releases))

    while True:
        if chain:
            after = skip_blanks(text, position)
            if after >= length:
                if final:
                    # The reply ends in a block: every block it holds counts, prose between
                    # them or not.
                    accepted.extend(pending)
                    pending.clear()
                    accepted.extend(chain)
                    return stop(length)
                return held(chain[0].start, chain_state)
            block = _block_at(table, text, after, context)
            if block is NEED_MORE:
                return held(chain[0].start, chain_state)
            if isinstance(block, Found):
                if ended_early:
                    block = msgspec.structs.replace(block, tail_only=True)
                chain.append(block)
                position = block.end
                continue
            # Prose follows the chain.
            if chain_whole:  # not a whole reply after all: that block is text
                chain, chain_whole = chain[1:], False
                if chain:
                    chain_state = ScanState(
                        reply_pending=False, line_start=_line_start(text, chain[0].start, state)
                    )
            if ended_early:
                pass  # after an implicit end, blocks that prose follows are text
            elif pending:
                pending.extend(chain)
            elif any(found.tail_only for found in chain):
                # A block that counts only at the tail, then prose: it and every later block
                # wait for the reply's end (all count if the reply ends in a block, else none).
                pending.extend(chain)
                pending_state = chain_state
            else:
                accepted.extend(chain)
            chain = []
            position = after
        if mode == TEXT:
            if reply_pending:
                start = skip_blanks(text, position)
                if start >= length:
                    return stop(length if final else position)
                opener = table.pattern.match(text, start)
                opened = REASONING.opens(opener.group(), text, start) if opener else None
                if opener is not None and opened is not None:
                    mode, wrapper, reply_after_think = THINK, opened, True
                    position = opener.end()
                    continue
                waiting = False
                found: Found | None = None
                for reader in table.whole:
                    result = reader.read(text, start, context)
                    if isinstance(result, Found):
                        result = with_end_tokens(reader, result, text, final)
                    if isinstance(result, Found):
                        found = result
                        break
                    waiting = waiting or result is NEED_MORE
                if found is None and waiting:
                    return stop(start)
                if found is None and not final and REASONING.may_open(text, start):
                    return stop(start)
                chain_state = ScanState(
                    reply_pending=True, line_start=_line_start(text, start, state)
                )
                reply_pending = False
                if found is not None:
                    if found.tail_only:
                        chain, chain_whole = [found], True
                    else:  # special tokens prose never holds (harmony's recipient first)
                        accepted.append(found)
                    position = found.end
                    continue
                position = start
            # Complete inline code is stepped over there, as the branch below and the CODE
            # branch would on two turns of the loop.
            match, position = table.next_token(text, position)
            if match is None:
                return stop(length if final else table.held_tail(text, position))
            token, at = match.group(), match.start()
            if (
                not final
                and token in table.extendable
                and length - at < table.longest
                and text[at:] in table.prefixes
            ):
                # The token may still grow into a longer one (```` ```t ```` into
                # ```` ```tool_code ````, ``<|channel|>analys`` into harmony's reasoning).
                return stop(at)
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
            if token in REASONING.tokens:
                opened = REASONING.opens(token, text, at)
                if opened is not None:
                    mode, wrapper, position = THINK, opened, match.end()
                    continue
                if token in REASONING.closers:
                    if ended_early:
                        # The reasoning an implicit end closed early closes here after all:
                        # the blocks read since were held as tail-only, so prose (this closer)
                        # made them text; the blocks before its opener stand.
                        reply_pending = reply_after_think
                    else:
                        # No opener before it: the prompt opened this reasoning, so every
                        # block before it is a draft, and the reply starts after it.
                        releases.append(at)
                        pending.clear()
                        reply_pending = True
                    reply_after_think = ended_early = False
                    position = match.end()
                    continue
                token = table.shorter.get(token, token)
            result = _read_at(table, text, at, token, context)
            if result is NEED_MORE:
                return stop(at)
            if isinstance(result, Found):
                if ended_early:
                    result = msgspec.structs.replace(result, tail_only=True)
                if result.tail_only or pending:
                    chain, chain_whole = [result], False
                    chain_state = ScanState(
                        line_start=_line_start(text, at, state),
                        reply_after_think=reply_after_think,
                        ended_early=ended_early,
                    )
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
        else:  # THINK: reasoning, up to where its wrapper ends it
            closing = REASONING.end(wrapper, text, position, final)
            if isinstance(closing, int):
                return stop(closing)  # never closed (yet): all of it is reasoning
            if not closing.implicit:
                mode, position = TEXT, closing.end
                if reply_after_think:
                    reply_pending, reply_after_think = True, False
                continue
            # An implicit end: where a reader's opener stands, only a block it reads ends the
            # reasoning (a mention of ``<tool_call>`` in a thought does not).
            marker = text[closing.start : closing.end]
            result = (
                _read_at(table, text, closing.start, marker, context)
                if marker in table.by_opener
                else None
            )
            if result is NEED_MORE:
                return stop(closing.start)
            if marker in table.by_opener and not isinstance(result, Found):
                # Still reasoning; what a reader stepped over (one JSON value) is not looked at
                # again, so that hostile reasoning costs linear time.
                resume = result.resume if isinstance(result, Skip) else 0
                position = max(resume, closing.end)
                continue
            mode, position, ended_early = TEXT, closing.start, True
