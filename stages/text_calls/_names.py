"""The tool-name grammar the readers share: a name is what the request offered, exactly.

Tool names are more than identifiers. MCP names its tools with letters, digits, ``_``, ``-``
and ``.`` (``mcp__fs__read-file``, ``Calendar.create_event``); OpenAI's Chat Completions
allows ``^[a-zA-Z0-9_-]{1,64}$`` (a name may start with a digit). So where a family's markup
delimits a name by its markers (``<function=NAME>``, ``[TOOL_CALLS]NAME[ARGS]``, ``NAME(``),
the name is the longest run of :data:`TOOL_NAME` characters there, and it counts only when it is
offered as written (``ReadContext.offered``). Nothing is stripped, completed or case-folded:
``functions.get_time`` is not ``get_time``, except in the families whose own grammar makes
``functions.`` a namespace (harmony's ``to=functions.NAME``, Kimi's ``functions.NAME:0``),
and a tool offered as ``functions.get_time`` is ``functions.functions.get_time`` there.
"""

from __future__ import annotations

import re

__all__ = ["TOOL_NAME", "TOOL_NAME_PATTERN"]

#: The characters of a tool name, as a regular expression (no group): Unicode word characters
#: (letters, digits, ``_``), ``.`` and ``-``. Greedy and possessive: a name never gives back a
#: character, so a following marker is never read into it nor cut from it.
TOOL_NAME = r"[\w.\-]++"
#: :data:`TOOL_NAME` compiled, for ``TOOL_NAME_PATTERN.match(text, index)``.
TOOL_NAME_PATTERN = re.compile(TOOL_NAME)
