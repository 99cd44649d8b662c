"""The LiteLLM proxy heals every tool call: :class:`ToolwireGuardrail`, a ``CustomGuardrail``.

Installed with a ``guardrails:`` entry of LiteLLM's ``config.yaml`` (the ``[litellm]`` extra;
``docs/litellm.md`` is the guide)::

    guardrails:
      - guardrail_name: toolwire
        litellm_params:
          guardrail: toolwire.gateway.litellm.ToolwireGuardrail
          mode: [pre_call, post_call]
          default_on: true
          provider: openai-chat      # the Chat server profile of the models behind (optional)
          max_retries: 2             # optional
          max_tokens_ceiling: 4096   # optional: a retry after a cut may raise max_tokens to it
          max_tokens_factor: 4       # optional: ... but to no more than 4x the client's own
          constrain: true            # optional: false re-asks a rejected call freely
          unconstrained_tools: []    # optional: tools whose re-ask is never constrained
          judge_budget: 2.0          # optional: seconds for a call too costly to check inline

Each hook is the healing contract of ``docs/healing.md`` for ``/chat/completions``, written
around the one healing session (:class:`~toolwire.heal.session.HealSession`, given the Chat
format from the registry), as the httpx transport and ``toolwire serve`` are:

- ``async_pre_call_hook``: the request is planned by the Chat format as the proxy plans it
  (``plan_request``): usage asked for on a stream (LiteLLM strips it again for a client that
  did not ask, as it does for its own), and a history holding an earlier call whose arguments a
  server refuses written as a rejected call. The request itself stays in LiteLLM's request
  data: the response hooks read it there as evidence (``max_tokens``, ``stop``, the tools).
- ``async_post_call_streaming_iterator_hook``: LiteLLM's chunks (``ModelResponseStream``
  objects, read like the openai SDK's chunk objects) are judged as they come; text goes out at
  once, each call whole once judged, a rejected call never; it is asked for again through the
  proxy's own router (``llm_router.acompletion``) with toolwire's true message, and the answer
  is judged the same way. What goes out are toolwire's encoder's chunks, already framed
  (``data: ...``): LiteLLM passes framed bytes on as they are and ends the stream with its
  ``[DONE]``.
- ``async_post_call_success_hook``: a whole ``chat.completion`` is judged the same way; an
  unchanged one goes back untouched, a healed one as a new ``ModelResponse``; a healing that
  fails is an HTTP error with the status the transport answers (the session's
  ``error_status``): 502 (``toolwire_heal_failed``; ``toolwire_upstream_error`` when the
  network failed a retry), 504 for a stall, a retry's own error status.

A retry the router could not send, or got no answer to (what LiteLLM raised its exception while
handling says so: :func:`unanswered`), is a fault of the network (``docs/healing.md``): the
same request once more after a drop, else the typed error; a retry the upstream answered with an
error status ends the exchange with ``retry_http_status`` naming the upstream's status
(:func:`answered_status`), as through the transport; one LiteLLM failed on an answer that
carried no error status (a body it could not use) with ``retry_failed``, in LiteLLM's words.

``/v1/messages``, ``/v1/responses`` and every other route pass untouched (``docs/litellm.md``
says why). Spans and metrics go to the global OpenTelemetry providers: in LiteLLM's process,
those its ``otel`` callback sets.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import msgspec
from litellm.integrations.custom_guardrail import CustomGuardrail

from ..adapters.encoding import sse_frame
from ..adapters.registry import heal_formats
from ..adapters.registry import provider as provider_entry
from ..api import Pipeline
from ..core.errors import ConfigurationError
from ..core.events import ProviderError, ResponseInfo
from ..core.wire import Done, HealPlan, WireFormat, WireItem
from ..heal.options import (
    CONSTRAIN_HEADER,
    checked_factor,
    constraint_options,
    request_constraint,
)
from ..heal.session import HealSession
from ..heal.telemetry import HealTelemetry
from ..stages.judge_process import DEFAULT_CHECK_BUDGET

__all__ = ["CHAT_REQUEST_KEYS", "ToolwireGuardrail", "answered_status", "unanswered"]

#: The keys of LiteLLM's request data that are the client's Chat Completions request (the rest
#: is LiteLLM's own: metadata, keys, call ids, the logging object...). What a retry re-sends.
CHAT_REQUEST_KEYS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "temperature",
        "top_p",
        "n",
        "seed",
        "stream",
        "stream_options",
        "response_format",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "user",
        "reasoning_effort",
        "verbosity",
        "service_tier",
    }
)
#: LiteLLM's call types of a Chat Completions request (``async_pre_call_hook``'s ``call_type``).
_CHAT_CALL_TYPES = frozenset({"completion", "acompletion"})
#: LiteLLM's own flag: the client did not ask for the usage chunk, the proxy did.
_STRIP_USAGE = "_litellm_strip_stream_usage"
#: The request keys of the output-token limit (see :func:`_without_limit`).
_LIMIT_KEYS = frozenset({"max_tokens", "max_completion_tokens"})
_encode = msgspec.json.Encoder().encode


class ToolwireGuardrail(CustomGuardrail):  # type: ignore[misc]  # LiteLLM is untyped here
    """A LiteLLM ``CustomGuardrail`` that heals every tool call (see the module docstring).

    ``provider`` names the Chat server profile of the models behind the proxy (how history is
    replayed, which evidence names the token limit: ``docs/providers.md``); ``max_retries``
    caps the retries of one request; ``max_tokens_ceiling`` lets a retry after a token-limit
    cut raise the limit up to it (``max_tokens_factor``: to no more than that many times the
    client's own); ``constrain`` and ``unconstrained_tools`` say whether a re-ask after a
    rejected call asks for that call's tool in its schema (``docs/healing.md``; a request says
    ``x-toolwire-constrain: off`` to turn it off for itself); ``judge_budget`` is the seconds a
    call too costly to check on the event loop may wait for a worker process, then as many for
    its check (``toolwire.Pipeline``, ``docs/repairs.md``; a number above 0 only, as in
    ``toolwire serve``: on a shared proxy a check with no budget would hold every client's
    event loop); ``capture_content`` puts arguments on the spans. Every other keyword is
    LiteLLM's (``guardrail_name``, ``event_hook``, ``default_on``...).
    """

    def __init__(
        self,
        provider: str = "openai-chat",
        max_retries: int = 2,
        max_tokens_ceiling: int | None = None,
        capture_content: bool | None = None,
        max_tokens_factor: float | None = None,
        constrain: bool = True,
        unconstrained_tools: Iterable[str] = (),
        judge_budget: float = DEFAULT_CHECK_BUDGET,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ConfigurationError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if judge_budget is None:
            raise ConfigurationError(
                "judge_budget must be a number of seconds > 0 in the guardrail, got None"
            )
        self._wire: WireFormat = heal_formats(provider)[0]  # Chat Completions comes first
        self._pipeline = Pipeline(
            provider, capture_content=capture_content, judge_budget=judge_budget
        )
        self._telemetry = HealTelemetry(capture_content=capture_content)
        self._gen_ai_name = provider_entry(provider).gen_ai_name
        self._max_retries = max_retries
        self._ceiling = max_tokens_ceiling
        self._factor = checked_factor(max_tokens_factor)
        self._constrain = constraint_options(constrain, unconstrained_tools)

    # -- LiteLLM's hooks ---------------------------------------------------------------------

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        """Plan a Chat Completions request: usage on a stream, a broken history repaired."""
        if str(call_type) not in _CHAT_CALL_TYPES:
            return data
        plan = self._plan(data)
        if plan is None:
            return data
        if plan.repaired or plan.adapted:
            data["messages"] = plan.body["messages"]
        if data.get("stream") is True:
            options = data.get("stream_options")
            if not (isinstance(options, dict) and options.get("include_usage") is True):
                data["stream_options"] = {
                    **(options if isinstance(options, dict) else {}),
                    "include_usage": True,
                }
                data[_STRIP_USAGE] = True
        return data

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> AsyncIterator[Any]:
        """LiteLLM's stream, healed: framed chunks of toolwire's encoder (or the stream as is)."""
        plan = self._response_plan(user_api_key_dict, request_data, streaming=True)
        if plan is None:
            async for chunk in response:
                yield chunk
            return
        session = self._session(plan, request_data)
        try:
            async for items in self._healed(session, response, request_data, streaming=True):
                framed = sse_frame(item for item in items if not isinstance(item, Done))
                if framed:
                    yield framed
        finally:
            session.close()

    async def async_post_call_success_hook(
        self, data: dict[str, Any], user_api_key_dict: Any, response: Any
    ) -> Any:
        """A whole ``chat.completion``, healed: ``None`` (unchanged) or the healed response."""
        plan = self._response_plan(user_api_key_dict, data, streaming=False)
        dump = getattr(response, "model_dump_json", None)
        if plan is None or not callable(dump):
            return None
        content = dump().encode()
        wire = self._wire
        first = wire.read_body(content)
        if first is None:
            return None  # not a completion toolwire writes back (several choices...)
        session = self._session(plan, data)
        items: list[WireItem] = []
        try:
            source = wire.body_as_stream(first)
            async for batch in self._healed(session, source, data, streaming=False):
                items += batch
        finally:
            session.close()
        error = wire.error_body(items)
        if error is not None:
            raise _heal_failed(error, session.error_status)
        if not session.rewritten:
            return None
        from litellm import ModelResponse

        return ModelResponse(**wire.healed_body(first, items))

    # -- the healing -------------------------------------------------------------------------

    def _plan(self, data: Mapping[str, Any]) -> HealPlan | None:
        """The Chat format's plan for the client's request in LiteLLM's request ``data``."""
        body = {key: value for key, value in data.items() if key in CHAT_REQUEST_KEYS}
        try:
            content = _encode(body)
        except (TypeError, msgspec.EncodeError):
            return None  # not a JSON request: nothing toolwire can judge
        return self._wire.plan_request(content)

    def _response_plan(
        self, user_api_key_dict: Any, data: Mapping[str, Any], *, streaming: bool
    ) -> HealPlan | None:
        """The plan of a response to heal: a Chat Completions route, a request with tools."""
        route = getattr(user_api_key_dict, "request_route", None)
        if isinstance(route, str) and route and not route.rstrip("/").endswith("/chat/completions"):
            return None  # /v1/messages, /v1/responses...: see docs/litellm.md
        plan = self._plan(data)
        if plan is None or not plan.heal:
            return None
        return msgspec.structs.replace(
            plan, streaming=streaming, client_wants_usage=not data.get(_STRIP_USAGE)
        )

    def _session(self, plan: HealPlan, data: Mapping[str, Any]) -> HealSession:
        return HealSession(
            plan.body,
            self._pipeline.next_messages,
            wire=self._wire,
            encoder=self._wire.encoder(plan),
            max_retries=self._max_retries,
            max_tokens_ceiling=self._ceiling,
            max_tokens_factor=self._factor,
            constrain=request_constraint(self._constrain, _request_header(data, CONSTRAIN_HEADER)),
            observer=self._telemetry.start(self._gen_ai_name, adapted=plan.adapted),
        )

    async def _healed(
        self, session: HealSession, source: Any, data: Mapping[str, Any], *, streaming: bool
    ) -> AsyncIterator[list[WireItem]]:
        """What the client receives, batch by batch, over the first response and each retry.

        ``source`` is the first response: LiteLLM's stream, or a whole body as a stream.
        """
        model = data.get("_litellm_client_requested_model") or data.get("model")
        while True:
            events = self._pipeline.stream(source, request=_without_limit(session.body))
            failure = "the upstream stream ended before its finish"
            try:
                async for event in events:
                    if isinstance(event, ResponseInfo) and isinstance(model, str):
                        # LiteLLM stamps the model the client asked for on every chunk.
                        event = msgspec.structs.replace(event, model=model)
                    elif isinstance(event, ProviderError) and event.kind == "transport":
                        # LiteLLM raised inside its stream (a dropped connection, the server's
                        # in-band error): its words are what the client is told.
                        failure = event.message
                    items = session.feed(event)
                    if items:
                        yield items
                    if session.outcome is not None:
                        break
            finally:
                await events.aclose()
            end = session.end_attempt()
            while True:
                if end.items:
                    yield end.items
                if end.dropped:
                    raise UpstreamDropped(f"{failure}; toolwire ends this stream too")
                if end.retry is None:
                    return
                try:
                    source = await self._ask_again(end.retry.body, data, streaming=streaming)
                except Exception as error:
                    fault = unanswered(error)
                    if fault is not None:
                        # Not sent, or no answer: a fault of the network (the same request
                        # once more after a drop, else the typed error), not an HTTP status.
                        end = session.unread(fault)
                        continue
                    # The upstream answered the retry: its HTTP error status when one came (never
                    # LiteLLM's class's, which is 500 for a refused connection too), else
                    # LiteLLM's words about an answer it could not use, with no status.
                    yield session.retry_refused(answered_status(error), str(error).encode())
                    return
                break

    async def _ask_again(
        self, body: dict[str, Any], data: Mapping[str, Any], *, streaming: bool
    ) -> Any:
        """The retry, through the proxy's own router: its stream, or its body as a stream."""
        from litellm.proxy.proxy_server import llm_router

        if llm_router is None:
            raise RuntimeError("the LiteLLM proxy has no router to ask the model again")
        metadata = data.get("metadata")
        extra = {"metadata": dict(metadata)} if isinstance(metadata, dict) else {}
        answer = await llm_router.acompletion(**body, **extra)
        if streaming:
            return answer
        content = answer.model_dump_json().encode()
        read = self._wire.read_body(content)
        if read is None:
            # An answer that is no completion goes to the pipeline as it is, as the transport
            # sends such a body: it is the response's unreadable piece, a typed error.
            return content
        return self._wire.body_as_stream(read)


def _request_header(data: Mapping[str, Any], name: str) -> str | None:
    """The client's request header ``name``, as LiteLLM's proxy keeps the request in its data
    (``proxy_server_request.headers``); ``None`` when it is not there."""
    request = data.get("proxy_server_request")
    headers = request.get("headers") if isinstance(request, Mapping) else None
    if not isinstance(headers, Mapping):
        return None
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name and isinstance(value, str):
            return value
    return None


def _without_limit(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the judge reads it: without its output-token limit.

    LiteLLM counts the output itself (tiktoken) when a server reports no usage, and hands its
    count on as the usage, with nothing to tell the two apart: compared with ``max_tokens``, a
    count would be evidence of a cut that never happened (a whole call "at the limit") or
    against one that did. Without the limit, usage is what was spent and never evidence; a
    ``length`` finish still is, and so is the server profile (``docs/litellm.md``).
    """
    return {key: value for key, value in body.items() if key not in _LIMIT_KEYS}


class UpstreamDropped(Exception):
    """The upstream stream dropped with nothing to heal: LiteLLM reports it to the client."""


def _heal_failed(error: dict[str, Any], status: int) -> Exception:
    """The HTTP error of a non-streamed exchange that ended in toolwire's error: ``status`` is
    the session's (502; 504 for a stall; a retry's own error status), never to be sent again
    by the SDK."""
    from fastapi import HTTPException

    inner = error.get("error", error)
    return HTTPException(status_code=status, detail=inner, headers={"x-should-retry": "false"})


#: The classes (by name, anywhere in a class's ancestry) of an exception that says a request
#: got no answer: httpx's ``RequestError`` (a refused connection, a drop, a read timeout) and
#: the ``APIConnectionError`` of the openai SDK and of LiteLLM (``APITimeoutError`` and
#: LiteLLM's ``Timeout`` included).
_NO_ANSWER = frozenset({"RequestError", "APIConnectionError"})
#: ... and of the one that carries the upstream's HTTP answer: httpx's, which the openai SDK
#: raises its status errors while handling. Not the SDK's ``APIStatusError`` itself: LiteLLM
#: raises one (``MidStreamFallbackError``, status 503) when nothing answered with a status
#: (measured on 1.108.7: a stream whose first event was the server's in-band error).
_ANSWER = "HTTPStatusError"
#: How far down a chain of exceptions is read (LiteLLM's are four or five deep).
_CHAIN_DEPTH = 16


def unanswered(error: BaseException) -> BaseException | None:
    """The exception that says the retry got no answer (a fault of the network), or ``None``
    when the upstream answered it with an error status (or it failed otherwise:
    :func:`answered_status`).

    LiteLLM's class does not say which it was: measured on 1.108.7, a refused connection, a
    hang-up and a body that broke off are all ``InternalServerError``, status 500, exactly as
    the upstream's own HTTP 500 is; a stall is ``Timeout`` (408), and so is an upstream's HTTP
    504 (status 504); a streamed retry whose first event is the server's in-band error is
    ``APIConnectionError`` (500) raised while handling a ``MidStreamFallbackError`` (503).
    What it raised from does: each of its exceptions is raised while handling the SDK's, which
    was raised while handling httpx's (``InternalServerError`` <- ``OpenAIError`` <- openai's
    ``APIConnectionError`` <- httpx's ``ReadError``; or <- openai's ``InternalServerError`` <-
    httpx's ``HTTPStatusError`` for an answer). So the chain is read from its innermost end,
    and the first exception that says either decides; classes are matched by name, as
    :mod:`toolwire.heal.faults` matches them (LiteLLM is not imported). The one returned is
    what ``session.unread`` names the fault by: httpx's ``ReadTimeout`` (or a ``...Timeout``)
    is a stall, the rest a drop or garbage. The in-band error is thus a drop, as the same
    exception is when LiteLLM raises it from the first response's stream (``docs/litellm.md``).
    """
    for link in _innermost_first(error):
        names = {kind.__name__ for kind in type(link).__mro__}
        if _ANSWER in names:
            return None
        if names & _NO_ANSWER:
            return link
    return None


def answered_status(error: BaseException) -> int | None:
    """The HTTP status the upstream answered a failed retry with, read from httpx's error in
    ``error``'s chain (see :func:`unanswered`), or ``None`` when none is there: the upstream
    answered (LiteLLM raised on a body it could not use: not JSON, empty) but no status says
    how, and none is made up."""
    for link in _innermost_first(error):
        if _ANSWER in {kind.__name__ for kind in type(link).__mro__}:
            status = getattr(getattr(link, "response", None), "status_code", None)
            return status if isinstance(status, int) else None
    return None


def _innermost_first(error: BaseException) -> list[BaseException]:
    """``error`` and what it was raised while handling, innermost first (at most
    :data:`_CHAIN_DEPTH`, each once).

    A context a ``raise ... from None`` hid is read too: the openai SDK raises its status
    errors so (``_make_status_error_from_response(...) from None``), which keeps httpx's
    ``HTTPStatusError``, the one sign of a real answer, out of a traceback but not out of
    ``__context__``.
    """
    chain: list[BaseException] = []
    link: BaseException | None = error
    while link is not None and len(chain) < _CHAIN_DEPTH and link not in chain:
        chain.append(link)
        link = link.__cause__ or link.__context__
    return chain[::-1]
