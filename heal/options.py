"""The healing options every shell takes alike: the constrained re-ask's switches, the retry's
token budget, and the header that says what a constrained re-ask brought.

The transport, ``toolwire serve`` and the LiteLLM guardrail check these once, the same way,
and read a request's own switch (``x-toolwire-constrain: off``) the same way
(``docs/healing.md``, "A constrained re-ask").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import quote

import msgspec

from ..adapters.constraints import ConstraintOptions
from ..core.errors import ConfigurationError

__all__ = [
    "CONSTRAINED_HEADER",
    "CONSTRAIN_HEADER",
    "checked_factor",
    "checked_names",
    "constrained_header",
    "request_constraint",
]

#: The request header that turns the constrained re-ask off for one request (``off``).
CONSTRAIN_HEADER = "x-toolwire-constrain"
#: The response header (on a whole response: a stream's headers go out before any retry) that
#: says which calls a constrained re-ask brought: ``tool=calls, ...``.
CONSTRAINED_HEADER = "x-toolwire-constrained"
#: The values of ``x-toolwire-constrain`` that turn the constraint off for one request.
_OFF = frozenset({"off", "0", "false", "no"})


def checked_factor(factor: object) -> float | None:
    """``max_tokens_factor``: ``None``, or a number of at least 1 (a retry's budget is never
    below the client's own)."""
    if factor is None:
        return None
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not factor >= 1:
        raise ConfigurationError(f"max_tokens_factor must be a number >= 1 or None, got {factor!r}")
    return float(factor)


def checked_names(names: Iterable[str]) -> list[str]:
    """Tool names (``unconstrained_tools``): strings, never one bare string (its letters)."""
    if isinstance(names, str | bytes):
        raise ConfigurationError(f"unconstrained_tools must be a list of names, got {names!r}")
    found = list(names)
    for name in found:
        if not isinstance(name, str):
            raise ConfigurationError(f"unconstrained_tools must hold names, got {name!r}")
    return found


def constraint_options(constrain: object, unconstrained_tools: Iterable[str]) -> ConstraintOptions:
    """The shell's constraint setting (``constrain``, ``unconstrained_tools``), checked: what
    the transport and the LiteLLM guardrail take alike."""
    return ConstraintOptions(
        enabled=bool(constrain), off_tools=frozenset(checked_names(unconstrained_tools))
    )


def request_constraint(options: ConstraintOptions, header: str | None) -> ConstraintOptions:
    """``options`` for one request whose ``x-toolwire-constrain`` header is ``header``: ``off``
    (or ``0``, ``false``, ``no``) turns the constraint off; anything else changes nothing (a
    request cannot turn on what the operator turned off)."""
    if header is not None and header.strip().lower() in _OFF and options.enabled:
        return msgspec.structs.replace(options, enabled=False)
    return options


def constrained_header(counts: Mapping[str, int]) -> str:
    """``tool=calls, ...`` for the ``x-toolwire-constrained`` response header; a name is
    percent-encoded past ``[A-Za-z0-9_.-]`` (a header value is ASCII)."""
    return ", ".join(f"{quote(tool, safe='')}={calls}" for tool, calls in sorted(counts.items()))
