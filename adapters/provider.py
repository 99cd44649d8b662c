"""What toolwire knows about one provider name: both directions of its wire format.

A provider is one package, ``adapters/<provider>/``, read and write: its mapper (the stream
read into events), its history format, its request reader, and, when toolwire heals it, its
healing format (the stream written back: :class:`~toolwire.core.wire.WireFormat`). Each adapter
package exports its entries (a ``PROVIDERS`` dict of name -> :class:`Provider`, one line per
name: the mapper class is its own factory);
:mod:`toolwire.adapters.registry` imports a package only when one of its names is first used,
so an application that reads one provider never imports the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from ..core.mapper import MapperFactory
from ..core.request import RequestFacts
from ..core.wire import WireFormatFactory
from .history import HistoryFormat

__all__ = ["Provider", "RequestReader"]

#: Reads a request body in the provider's own shape into :class:`RequestFacts`.
RequestReader = Callable[[Mapping[str, Any]], RequestFacts]


class Provider(msgspec.Struct, frozen=True):
    """Everything toolwire knows about one provider name."""

    #: ``gen_ai.provider.name`` on spans and metrics (``openai``, ``anthropic``, ``gcp.gemini``).
    gen_ai_name: str
    #: A fresh sans-I/O mapper for one stream (a mapper class taking its settings is one).
    open_mapper: MapperFactory
    #: The reverse direction: assistant turn, tool results, and the history check.
    history: HistoryFormat
    #: Reads a request body (its limit keys are declared once, beside it, for healing too).
    read_request: RequestReader
    #: Opens its healing format (or formats, one per endpoint), ``None`` when toolwire does not
    #: heal it.
    open_heal_format: WireFormatFactory | None = None
    #: ``text_calls="auto"`` reads calls left in the text for this provider: local servers,
    #: whose tool parsers miss calls (``docs/text-calls.md``); hosted APIs parse their own.
    reads_text_calls: bool = False
    #: Local servers serve this endpoint too, and answer it through the tool parser of their
    #: Chat Completions, so that a call it missed there stays in the text here as well
    #: (llama-server converts ``/v1/messages`` and ``/v1/responses`` to a Chat request). Where
    #: the healing names its upstream as a server whose calls are read in the text
    #: (``HealingTransport(provider=...)``, ``toolwire serve --provider``), they are read on
    #: this endpoint too (:func:`~toolwire.adapters.registry.reads_text_calls_behind`).
    served_by_local_servers: bool = False
    #: The Chat Completions provider name of this provider's server, when that server serves
    #: Chat Completions too (native Ollama's ``/v1`` is ``ollama-openai``): naming the upstream
    #: by this provider's name heals its Chat endpoint with that profile.
    chat_provider: str | None = None
