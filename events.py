"""Every event toolwire emits, and the types of their fields: what ``stream()`` yields.

Events are frozen msgspec Structs tagged with a dotted name (``tool_call.ready``): dispatch with
``match`` on the class and derive a changed copy with ``msgspec.structs.replace``. The order of
one stream, the judge's part in it and every tag are drawn in ``docs/design.md`` (Events): text,
reasoning and tool-call events as they arrive, each ``ToolCallComplete`` replaced by exactly one
of ``ToolCallReady``, ``ToolCallRepaired``, ``ToolCallRejected`` when the judge runs, then
``Finish`` and ``StreamEnd`` exactly once, last. :func:`encode_event` and :func:`decode_event`
write and read any built-in event as JSON, for recordings and logs.
"""

from .core.events import LIMIT_EVIDENCE as LIMIT_EVIDENCE
from .core.events import ArgumentsForm as ArgumentsForm
from .core.events import CallOrigin as CallOrigin
from .core.events import ClosedBy as ClosedBy
from .core.events import CutBy as CutBy
from .core.events import CutFacts as CutFacts
from .core.events import Damage as Damage
from .core.events import Event as Event
from .core.events import Finish as Finish
from .core.events import JudgedCallEvent as JudgedCallEvent
from .core.events import ProviderContent as ProviderContent
from .core.events import ProviderError as ProviderError
from .core.events import ProviderErrorKind as ProviderErrorKind
from .core.events import QuotedForm as QuotedForm
from .core.events import ReasoningDelta as ReasoningDelta
from .core.events import ResponseInfo as ResponseInfo
from .core.events import ServerParse as ServerParse
from .core.events import ServerParseAbout as ServerParseAbout
from .core.events import StopCondition as StopCondition
from .core.events import StopReason as StopReason
from .core.events import StreamEnd as StreamEnd
from .core.events import TextCallMarkup as TextCallMarkup
from .core.events import TextDelta as TextDelta
from .core.events import ToolCallArgumentsDelta as ToolCallArgumentsDelta
from .core.events import ToolCallComplete as ToolCallComplete
from .core.events import ToolCallReady as ToolCallReady
from .core.events import ToolCallRejected as ToolCallRejected
from .core.events import ToolCallRepaired as ToolCallRepaired
from .core.events import ToolCallStarted as ToolCallStarted
from .core.events import TruncationEvidence as TruncationEvidence
from .core.events import TurnStopped as TurnStopped
from .core.events import Usage as Usage
from .core.events import decode_event as decode_event
from .core.events import encode_event as encode_event

__all__ = [
    "LIMIT_EVIDENCE",
    "ArgumentsForm",
    "CallOrigin",
    "ClosedBy",
    "CutBy",
    "CutFacts",
    "Damage",
    "Event",
    "Finish",
    "JudgedCallEvent",
    "ProviderContent",
    "ProviderError",
    "ProviderErrorKind",
    "QuotedForm",
    "ReasoningDelta",
    "ResponseInfo",
    "ServerParse",
    "ServerParseAbout",
    "StopCondition",
    "StopReason",
    "StreamEnd",
    "TextCallMarkup",
    "TextDelta",
    "ToolCallArgumentsDelta",
    "ToolCallComplete",
    "ToolCallReady",
    "ToolCallRejected",
    "ToolCallRepaired",
    "ToolCallStarted",
    "TruncationEvidence",
    "TurnStopped",
    "Usage",
    "decode_event",
    "encode_event",
]
