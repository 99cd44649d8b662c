"""Calls left in the text: the model's own tool-call markup, read where the server did not.

One small reader per family with a grammar of its own (one module each), one row of data per
family that differs from others only in its markers (``families.py``, read by ``wrapped.py``),
a registry of them, the scanner that decides where markup may stand, and the stage.
``docs/text-calls.md`` says exactly what counts and why.
"""

from ._reading import NEED_MORE as NEED_MORE
from ._reading import Found as Found
from ._reading import ReadContext as ReadContext
from ._reading import ReadResult as ReadResult
from ._reading import Skip as Skip
from ._reading import TextCall as TextCall
from ._reading import TextCallReader as TextCallReader
from .registry import BUILT_IN_READERS as BUILT_IN_READERS
from .registry import readers_for as readers_for
from .registry import register_text_call_reader as register_text_call_reader
from .registry import text_call_families as text_call_families
from .stage import TextCallStage as TextCallStage

#: The names the lower tier (``toolwire.lowlevel``) gives them, where a short name would be vague.
TEXT_CALL_NEED_MORE = NEED_MORE
TextCallFound = Found
TextCallSkip = Skip
TextCallContext = ReadContext

__all__ = [
    "BUILT_IN_READERS",
    "NEED_MORE",
    "TEXT_CALL_NEED_MORE",
    "Found",
    "ReadContext",
    "ReadResult",
    "Skip",
    "TextCall",
    "TextCallContext",
    "TextCallFound",
    "TextCallReader",
    "TextCallSkip",
    "TextCallStage",
    "readers_for",
    "register_text_call_reader",
    "text_call_families",
]
