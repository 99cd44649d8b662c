"""Google Gemini and Vertex AI (``generateContent``, ``streamGenerateContent``), both directions:
mapper, history, requests, and the healing encoder and formats."""

from ..provider import Provider
from .encoder import GeminiChunkEncoder as GeminiChunkEncoder
from .finish import block_reason_from_gemini as block_reason_from_gemini
from .finish import finish_reason_from_gemini as finish_reason_from_gemini
from .healing import GEMINI_ARRAY as GEMINI_ARRAY
from .healing import GEMINI_STREAM as GEMINI_STREAM
from .healing import GEMINI_WHOLE as GEMINI_WHOLE
from .healing import open_gemini_formats
from .history import GeminiHistory as GeminiHistory
from .mapper import GeminiMapper as GeminiMapper
from .request import read_gemini_request as read_gemini_request

__all__ = [
    "GEMINI_ARRAY",
    "GEMINI_STREAM",
    "GEMINI_WHOLE",
    "PROVIDERS",
    "GeminiChunkEncoder",
    "GeminiHistory",
    "GeminiMapper",
    "block_reason_from_gemini",
    "finish_reason_from_gemini",
    "read_gemini_request",
]


#: The provider name ``gemini`` (``gen_ai.provider.name`` ``gcp.gemini``), Vertex AI included.
PROVIDERS: dict[str, Provider] = {
    "gemini": Provider(
        "gcp.gemini", GeminiMapper, GeminiHistory(), read_gemini_request, open_gemini_formats
    ),
}
