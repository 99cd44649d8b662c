"""What toolwire knows about one provider name: its wire format, history format and requests.

Each adapter package exports its entries (a ``PROVIDERS`` dict of name -> :class:`Provider`);
:mod:`toolwire.adapters.registry` imports a package only when one of its names is first used,
so an application that reads one provider never imports the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from ..core.mapper import MapperFactory
from ..core.request import RequestFacts
from .history import HistoryFormat

__all__ = ["Provider", "RequestReader"]

#: Reads a request body in the provider's own shape into :class:`RequestFacts`.
RequestReader = Callable[[Mapping[str, Any]], RequestFacts]


class Provider(msgspec.Struct, frozen=True):
    """Everything toolwire knows about one provider name."""

    #: ``gen_ai.provider.name`` on spans and metrics (``openai``, ``anthropic``, ``gcp.gemini``).
    gen_ai_name: str
    #: A fresh sans-I/O mapper for one stream.
    open_mapper: MapperFactory
    #: The reverse direction: assistant turn, tool results, and the history check.
    history: HistoryFormat
    read_request: RequestReader
