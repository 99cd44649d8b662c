"""The judge: decide whether a tool call's raw arguments may run, repairing only what is certain.

Pure and synchronous: :func:`parse_arguments` turns one raw arguments text into one
:class:`~toolwire.core.verdict.Verdict`; the judge stage (in ``toolwire.stages``) drives it
for every complete tool call. See ``docs/repairs.md`` for every repair kind and why it is safe.
"""

from ._core import ENVELOPE_KEYS as ENVELOPE_KEYS
from ._core import ToolSchema as ToolSchema
from ._core import parse_arguments as parse_arguments
from ._message import QUOTE_LIMIT as QUOTE_LIMIT
from ._message import render_message as render_message
from ._policy import DEFAULT_POLICY as DEFAULT_POLICY
from ._policy import REPAIR_KINDS as REPAIR_KINDS
from ._policy import STRICT_POLICY as STRICT_POLICY
from ._policy import Policy as Policy
from ._schema import SchemaChecker as SchemaChecker
from ._tools import ToolRegistry as ToolRegistry
from ._tools import Toolset as Toolset
from ._tools import ToolSpec as ToolSpec
from ._tools import tool_schema_from as tool_schema_from

__all__ = [
    "DEFAULT_POLICY",
    "ENVELOPE_KEYS",
    "QUOTE_LIMIT",
    "REPAIR_KINDS",
    "STRICT_POLICY",
    "Policy",
    "SchemaChecker",
    "ToolRegistry",
    "ToolSchema",
    "ToolSpec",
    "Toolset",
    "parse_arguments",
    "render_message",
    "tool_schema_from",
]
