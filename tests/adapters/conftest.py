"""Puts this folder on ``sys.path``: the provider folders below import its shared helpers.

``tests/adapters/<provider>/`` mirrors ``adapters/<provider>/``. Those folders have no
``__init__.py`` on purpose: a package named ``anthropic``, ``ollama`` or ``openai_chat`` under a
folder on ``sys.path`` would shadow the SDK of that name. So their modules are imported by their
file names (which stay unique), and the helpers they share, ``_mapper_properties`` and
``_recorded_turns``, are found here whichever folder pytest is given first.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
