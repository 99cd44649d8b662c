"""Which repairs the judge may apply, and how large an arguments text may be.

``Policy`` is a frozen msgspec ``Struct`` rather than a pydantic model or a dataclass: it is
plain configuration read on the hot path (one attribute access per repair considered), it is
hashable so it can key caches, it encodes to JSON for ``toolwire check`` and telemetry, and
``msgspec.structs.replace`` derives variants without mutation, like every other toolwire
struct. Its fields are only booleans and one integer, so pydantic's validation would buy nothing.
"""

from __future__ import annotations

from typing import get_args

import msgspec

from ..core.verdict import RepairKind

__all__ = ["DEFAULT_POLICY", "REPAIR_KINDS", "STRICT_POLICY", "Policy"]

#: Every repair kind, in the order the judge applies them (outermost layer first).
REPAIR_KINDS: tuple[RepairKind, ...] = get_args(RepairKind)

#: The default size limit: 1 MiB of UTF-8.
DEFAULT_MAX_BYTES = 1_048_576


class Policy(msgspec.Struct, frozen=True, kw_only=True):
    """One switch per repair kind, plus the size limit.

    A switch that is off makes the judge reject text that only that repair would have
    accepted (usually as ``not_json``). With every switch off (:data:`STRICT_POLICY`) only a
    strict JSON object passes: empty text is rejected as ``not_json`` and ``null`` as
    ``wrong_type``. ``max_bytes`` is measured on the UTF-8 encoding of the raw text; a larger
    text is rejected as ``too_large`` before any parsing.
    """

    empty: bool = True
    null_as_empty: bool = True
    double_encoded: bool = True
    fence: bool = True
    prose: bool = True
    template_markers: bool = True
    wrapping_braces: bool = True
    bare_keys: bool = True
    single_quoted_keys: bool = True
    quote_tokens: bool = True
    python_literal: bool = True
    trailing_commas: bool = True
    control_chars: bool = True
    invalid_escapes: bool = True
    envelope: bool = True
    max_bytes: int = DEFAULT_MAX_BYTES

    def allows(self, kind: RepairKind) -> bool:
        """True when repairs of ``kind`` may be applied."""
        return bool(getattr(self, kind))

    def without(self, *kinds: RepairKind) -> Policy:
        """A copy of this policy with the given repair kinds turned off."""
        return msgspec.structs.replace(self, **dict.fromkeys(kinds, False))

    def only(self, *kinds: RepairKind) -> Policy:
        """A copy of this policy with exactly the given repair kinds turned on."""
        switches = {kind: kind in kinds for kind in REPAIR_KINDS}
        return msgspec.structs.replace(self, **switches)


#: Every repair on: the policy described in ``docs/repairs.md``.
DEFAULT_POLICY = Policy()

#: Every repair off: only a strict JSON object passes.
STRICT_POLICY = DEFAULT_POLICY.only()
