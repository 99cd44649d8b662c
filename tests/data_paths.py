"""Where the suite's data lives: ``tests/data/``, inside the repository, so a clone runs alone.

Every test, helper and benchmark that reads a recorded stream or a behaviour vector takes its
path from here, never from a path of its own built from ``__file__``: the data was once read
from a ``shared/`` folder beside the checkout, and a fresh clone failed to collect without it.
``tests/data/PROVENANCE.md`` says where each file came from, with its sha256
(``tests/test_self_contained.py`` checks both: the hashes, and that no source leaves the root).
"""

from __future__ import annotations

from pathlib import Path

#: ``tests/data/``: the copied fixtures and vectors, and their provenance.
DATA = Path(__file__).resolve().parent / "data"
#: Recorded provider streams, one folder per provider (``README.md`` there says where each is from).
STREAMS = DATA / "fixtures" / "streams"
#: Behaviour vectors: ``tool_args.jsonl`` and ``stream_fragments.jsonl`` (see ``README.md`` there).
VECTORS = DATA / "vectors"
