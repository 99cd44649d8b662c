"""toolwire: make LLM tool calls safe to stream."""

from .pipeline.api import collect as collect
from .pipeline.api import stream as stream

__version__ = "0.1.0"
