"""OpenAI Chat Completions, and every server that speaks it: the mapper and the history format."""

from .history import OpenAIChatHistory as OpenAIChatHistory
from .mapper import OpenAIChatMapper as OpenAIChatMapper
from .mapper import finish_reason_from_openai as finish_reason_from_openai

__all__ = ["OpenAIChatHistory", "OpenAIChatMapper", "finish_reason_from_openai"]
