"""Google Gemini and Vertex AI ``streamGenerateContent?alt=sse``: mapper, history, requests."""

from ..provider import Provider
from .finish import block_reason_from_gemini as block_reason_from_gemini
from .finish import finish_reason_from_gemini as finish_reason_from_gemini
from .history import GeminiHistory as GeminiHistory
from .mapper import GeminiMapper as GeminiMapper
from .request import read_gemini_request as read_gemini_request

__all__ = [
    "PROVIDERS",
    "GeminiHistory",
    "GeminiMapper",
    "block_reason_from_gemini",
    "finish_reason_from_gemini",
    "read_gemini_request",
]


#: The provider names this package serves (not healed yet: no healing format).
PROVIDERS: dict[str, Provider] = {
    "gemini": Provider("gcp.gemini", GeminiMapper, GeminiHistory(), read_gemini_request),
}
