"""Shell 1: an httpx transport that heals every tool-call request sent through it.

::

    transport = toolwire.HealingTransport(wrapped=httpx.AsyncHTTPTransport(), provider="llama-cpp")
    client = openai.AsyncOpenAI(base_url=..., http_client=httpx.AsyncClient(transport=transport))

Every ``POST .../chat/completions``, ``.../messages`` (Anthropic), ``.../responses``, Gemini's
and Vertex's ``...:generateContent`` / ``...:streamGenerateContent`` and Ollama's ``/api/chat``
that offers tools is healed in its own wire format (see :mod:`toolwire.heal` and each format's
``plan_request``); every other request, and one a format does not heal, goes to ``wrapped``
untouched.
The I/O contract:

- The request goes upstream as the client wrote it, headers (``Authorization`` included) and
  body, except ``stream_options.include_usage`` on a streamed request that did not ask for
  usage, and what the server's profile needs adapted (the Chat format's ``plan_request``;
  the response then carries ``x-toolwire-adapted``), and earlier calls of the history whose
  arguments a server refuses, written as rejected calls (``plan.repaired``; the response then
  carries ``x-toolwire-history-repaired``, ``arguments_not_json=1``). Retries go to the same
  URL with the same headers. Nothing here logs a header or a body.
- A streamed request the server cannot stream (``plan.whole_upstream``) is asked whole; the
  judged answer is streamed to the client once the whole answer is in.
- An error status from upstream reaches the client unchanged: status, headers, body; except a
  tool-parser error body (the server could not parse the model's call: Ollama's, llama-server's,
  vLLM's and LM Studio's 500s, :mod:`toolwire.adapters.parser_errors`), healed like any rejected
  call: asked again with the true message, the healed answer a 200 (streamed if asked), the
  typed heal failure when the retries are spent; when the calls its quote holds all pass, they
  are the answer, a 200 with no retry. A retry answered by such a body is the same: the
  model's output again, asked again while retries are left (issue 27). (Any other error status
  of a retry, on a streamed response whose 200 is already sent, becomes an in-band error; on a
  non-streamed one it is the response.) A server's refusal of the request's
  history (llama-server's 500 ``Failed to parse tool call arguments as JSON``, vLLM's 400)
  is not the model's: it reaches the client as the server answered it, streamed request or
  not, with ``x-toolwire-history-refused`` (what toolwire knows, what to change) and
  ``x-should-retry: false`` added (:mod:`.history_refusal`).
- A streamed response starts as soon as the upstream's headers arrive; text and reasoning go
  out as they come; calls once judged. The body is produced while the client reads it, in the
  client's task: no task is started, nothing runs when the client is not reading, and a
  client that closes the response (or is cancelled) closes the upstream response at once.
- An upstream stream that dropped with nothing to heal drops for the client too
  (``httpx.RemoteProtocolError``; the openai SDK raises ``APIConnectionError``). Any other
  fault of the network (a drop while a call was written, a stall, garbage; a whole body that
  broke off; a retry that could not be sent) is the session's (:mod:`toolwire.heal.faults`):
  the same request once more after a drop, else a typed ``toolwire_upstream_error``, in band or
  HTTP 502 (504 for a stall) with ``x-should-retry: false``; a retry's own error status on a
  whole exchange reaches the client with ``x-should-retry: false`` added.
- A non-streamed healing that fails is HTTP 502 with ``x-should-retry: false`` and an
  ``{"error": {"type": "toolwire_heal_failed", ...}}`` body (the openai SDK raises
  ``InternalServerError`` and does not resend). A non-streamed body with nothing to change
  goes to the client byte for byte; a 200 body that is not JSON at all is such a 502 too
  (``toolwire_upstream_error``, code ``not_json``), never a 200 the SDK cannot parse. Every
  non-streamed healed answer says what its exchange took: ``x-toolwire-attempts``,
  ``x-toolwire-rejected-calls``, ``x-toolwire-repaired-calls`` (a stream's headers go out
  before anything is judged, so a stream carries none of them).
- A piece of a streamed response toolwire cannot read ends the client's stream with a typed
  in-band error (:mod:`toolwire.heal.session`): text is never dropped silently.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from typing import Any, NamedTuple

import anyio
import httpx
import msgspec
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from ..adapters.parser_errors import parser_error_readers
from ..adapters.registry import heal_formats, read_request, reads_text_calls_behind
from ..adapters.registry import provider as provider_entry
from ..api import Pipeline, TruncatedCalls
from ..core.errors import ConfigurationError
from ..core.events import Event, ProviderError
from ..core.parser_errors import read_parser_error
from ..core.wire import HealPlan, HealSettings, WireFormat, WireItem
from ..judge import Policy
from ..stages.judge import JudgeStage
from ..stages.judge_cache import tool_list_key
from ..stages.judge_process import DEFAULT_CHECK_BUDGET
from ..stages.telemetry.observer import Redactor
from ..stages.text_calls import readers_for
from .history_refusal import HISTORY_REFUSED_HEADER as HISTORY_REFUSED_HEADER
from .history_refusal import SHOULD_RETRY, refusal_headers
from .options import CONSTRAIN_HEADER as CONSTRAIN_HEADER
from .options import CONSTRAINED_HEADER as CONSTRAINED_HEADER
from .options import (
    checked_factor,
    constrained_header,
    constraint_options,
    request_constraint,
)
from .refusal import Refusal, ToolLimits, compiled_or_refusal, tools_refusal
from .request_body import unreadable_refusal
from .session import AttemptEnd, HealSession
from .telemetry import HealTelemetry
from .whole_body import read_whole

__all__ = [
    "ADAPTED_HEADER",
    "ATTEMPTS_HEADER",
    "BODY_CHECKED",
    "CONSTRAINED_HEADER",
    "CONSTRAIN_HEADER",
    "HISTORY_REFUSED_HEADER",
    "HISTORY_REPAIRED_HEADER",
    "REJECTED_CALLS_HEADER",
    "REPAIRED_CALLS_HEADER",
    "RESENDABLE",
    "HealingTransport",
]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
#: Headers that describe the upstream's bytes, not the body the client receives.
_BODY_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})
#: Request bodies larger than this are planned and checked in a worker thread.
_PLANNED_IN_A_THREAD_ABOVE = 64 * 1024
#: How much of a retry's error body is read, to quote it.
_ERROR_BODY_CAP = 64 * 1024
#: The status of a non-streamed exchange whose healing failed: the upstream answered, but with
#: a call toolwire will not pass on (502 Bad Gateway), sent with ``x-should-retry: false`` so
#: that the openai SDK raises at once instead of sending the whole request again.
FAILED_STATUS = 502
#: The response header that says what was adapted so that the server accepts the request
#: (``assistant_content=1, tool_result_role=2, stream=1``; see each format's ``plan_request``).
ADAPTED_HEADER = "x-toolwire-adapted"
#: The response header that says which earlier calls of the request's history were repaired
#: (``arguments_not_json=1``: problem kind = calls; see ``HealPlan.repaired``).
HISTORY_REPAIRED_HEADER = "x-toolwire-history-repaired"
#: The request extension that tells the transport below that the request may be sent twice: a
#: healed request keeps no state on the server (each format's ``plan_request`` leaves one that
#: does unhealed), and the healing sends it again itself (a retry, the resend after a drop).
#: ``toolwire serve``'s upstream sends such a request once more when a kept-alive connection
#: closed before answering it (:mod:`toolwire.serve.upstream`).
RESENDABLE = "toolwire.resendable"
#: The request extension that says the body was already read by
#: :func:`~toolwire.heal.request_body.body_refusal` and passed (``toolwire serve`` reads every
#: body on a healed path so): the transport does not read it again to find it unreadable.
BODY_CHECKED = "toolwire.body_checked"
#: The response headers of a whole (non-streamed) healed answer that say what its exchange took
#: (``HealSession.figures``): upstream requests tried (the first, each retry, the one resend
#: after a drop), calls toolwire rejected (never passed on), calls passed on repaired.
ATTEMPTS_HEADER = "x-toolwire-attempts"
REJECTED_CALLS_HEADER = "x-toolwire-rejected-calls"
REPAIRED_CALLS_HEADER = "x-toolwire-repaired-calls"


class HealingTransport(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` that heals the tool calls going through it.

    ``wrapped`` sends the requests (``httpx.AsyncHTTPTransport()`` by default); ``provider``
    says what kind of server the upstream is (a Chat Completions provider name, or ``ollama``:
    :func:`~toolwire.adapters.registry.upstream_names`), for every endpoint it heals. On
    ``/chat/completions`` its server profile decides how history is replayed and which
    truncation evidence counts (``llama-cpp`` for llama-cpp-python); every other healed format
    is the registry's (Anthropic and Responses requests are read as ``anthropic`` and
    ``openai-responses``, see :func:`~toolwire.adapters.registry.heal_formats`). On a local
    server (``llama-server``, ``vllm``, ``sglang``, ``ollama``...), calls left in the text are
    read on every endpoint it serves, Messages and Responses included
    (:func:`~toolwire.adapters.registry.reads_text_calls_behind`). ``max_retries``
    caps the retries of one request (0: reject without asking again); ``max_tokens_ceiling``,
    when set, lets a retry after a token-limit cut double the request's limit up to it, and
    ``max_tokens_factor`` to no more than that many times the client's own. ``constrain``
    (on by default) asks a re-ask after a rejected call for a call to that call's tool in its
    schema, in the server's own way, but for the tools in ``unconstrained_tools`` and the
    requests that say ``x-toolwire-constrain: off`` (``docs/healing.md``).
    ``policy``, ``truncated_calls`` and ``judge_budget`` are the judge's
    (:class:`toolwire.Pipeline`; ``judge_budget`` bounds the check of a call too costly for
    the event loop, ``docs/repairs.md``);
    ``tracer_provider``, ``meter_provider``, ``capture_content`` and ``redact`` are where the
    spans and metrics of every response and of the healing go (``docs/healing.md``).
    ``reasoning_field`` is the delta key reasoning is sent under. ``tool_limits`` bounds the
    tools one request may offer (:class:`~toolwire.heal.refusal.ToolLimits`): a request over
    them, or with a tool the judge cannot use, is answered HTTP 400 here and never sent; so is
    a request to a healed endpoint whose body the healing cannot read (``NaN``, ``1e400``, a
    byte order mark, a lone surrogate, bytes that are not UTF-8, no JSON:
    :mod:`~toolwire.heal.request_body`), which went upstream unhealed in silence before.
    """

    def __init__(
        self,
        wrapped: httpx.AsyncBaseTransport | None = None,
        provider: str = "openai-chat",
        *,
        max_retries: int = 2,
        max_tokens_ceiling: int | None = None,
        policy: Policy | None = None,
        truncated_calls: TruncatedCalls = "reject",
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool | None = None,
        redact: Redactor | None = None,
        reasoning_field: str = "reasoning_content",
        tool_limits: ToolLimits | None = None,
        max_tokens_factor: float | None = None,
        constrain: bool = True,
        unconstrained_tools: Iterable[str] = (),
        judge_budget: float | None = DEFAULT_CHECK_BUDGET,
    ) -> None:
        formats = heal_formats(provider, HealSettings(reasoning_field=reasoning_field))
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ConfigurationError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if max_tokens_ceiling is not None and (
            not isinstance(max_tokens_ceiling, int)
            or isinstance(max_tokens_ceiling, bool)
            or max_tokens_ceiling < 1
        ):
            raise ConfigurationError(
                f"max_tokens_ceiling must be a positive int or None, got {max_tokens_ceiling!r}"
            )
        if reasoning_field not in ("reasoning_content", "reasoning"):
            raise ConfigurationError(
                f"reasoning_field must be 'reasoning_content' or 'reasoning', "
                f"got {reasoning_field!r}"
            )
        self._wrapped = wrapped if wrapped is not None else httpx.AsyncHTTPTransport()
        self._formats = formats
        # One setting for every endpoint: what kind of server the upstream is decides, per
        # format, whether calls left in the text are read (the registry knows which formats
        # local servers serve too); read by every registered family, as ``"auto"`` reads them.
        every_family = readers_for(None)

        def pipeline(name: str) -> Pipeline:
            return Pipeline(
                name,
                policy=policy,
                truncated_calls=truncated_calls,
                judge_budget=judge_budget,
                tracer_provider=tracer_provider,
                meter_provider=meter_provider,
                capture_content=capture_content,
                redact=redact,
                text_calls=every_family if reads_text_calls_behind(name, provider) else "off",
            )

        self._pipelines = {wire.provider: pipeline(wire.provider) for wire in formats}
        self._pipeline = self._pipelines[formats[0].provider]  # Chat Completions comes first
        self._telemetry = HealTelemetry(
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            capture_content=capture_content,
            redact=redact,
        )
        self._max_retries = max_retries
        self._ceiling = max_tokens_ceiling
        self._factor = checked_factor(max_tokens_factor)
        self._constrain = constraint_options(constrain, unconstrained_tools)
        if tool_limits is not None and not isinstance(tool_limits, ToolLimits):
            raise ConfigurationError(f"tool_limits must be a ToolLimits, got {tool_limits!r}")
        self._tool_limits = tool_limits or ToolLimits()

    @property
    def pipeline(self) -> Pipeline:
        """The pipeline every upstream Chat Completions response is judged with."""
        return self._pipeline

    def pipeline_for(self, wire: WireFormat) -> Pipeline:
        """The pipeline the responses of ``wire`` are judged with."""
        return self._pipelines[wire.provider]

    def format_for(self, request: httpx.Request) -> WireFormat | None:
        """The wire format that heals ``request``, or ``None`` when it is not a call to heal."""
        if request.method != "POST":
            return None
        path = request.url.path.rstrip("/")
        query = request.url.query.decode("ascii", "replace")
        target = f"{path}?{query}" if query else path
        for wire in self._formats:
            where = wire.path
            if path.endswith(where) if isinstance(where, str) else where.search(target):
                return wire
        return None

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._wrapped.aclose()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; heal the response when it is a Chat Completions call with tools."""
        wire = self.format_for(request)
        if wire is None:
            return await self._wrapped.handle_async_request(request)
        planned = await self._checked_plan(
            wire, await request.aread(), checked=request.extensions.get(BODY_CHECKED) is True
        )
        if planned is None:
            response = await self._wrapped.handle_async_request(request)
            if 200 <= response.status_code < 300:
                return response
            return await self._parser_error(wire, response, None)  # a history refused, too
        if isinstance(planned, Refusal):
            return refused(planned)
        plan, judge = planned
        if plan.heal:
            request = _resendable(request)
        if plan.query_params:
            # The retries go where the first request went: to the upstream's URL.
            url = request.url.copy_merge_params(dict(plan.query_params))
            request = _with_content(request, request.content, url=url)
        if not plan.adapted and not plan.repaired:
            return await self._send_planned(request, wire, plan, judge)
        said = ((ADAPTED_HEADER, plan.adapted), (HISTORY_REPAIRED_HEADER, plan.repaired))
        name = provider_entry(wire.provider).gen_ai_name
        if plan.adapted:
            self._telemetry.count_adapted(name, plan.adapted)
        if plan.repaired:
            self._telemetry.count_repaired(name, plan.repaired)
        response = await self._send_planned(request, wire, plan, judge)
        for header, counts in said:
            if counts:
                response.headers[header] = ", ".join(
                    f"{kind}={count}" for kind, count in sorted(counts.items())
                )
        return response

    async def _send_planned(
        self, request: httpx.Request, wire: WireFormat, plan: HealPlan, judge: JudgeStage | None
    ) -> httpx.Response:
        upstream = request if plan.content is None else _with_content(request, plan.content)
        response = await self._wrapped.handle_async_request(upstream)
        if not 200 <= response.status_code < 300:
            response = await self._parser_error(wire, response, plan)
            if not isinstance(response, _ParserError):
                return response  # an error the model did not cause: the client's, unchanged
        elif not plan.heal:
            return response
        if plan.streaming:
            session = self._session(wire, plan, request)
            run = _HealedStream(self, request, wire, plan, session, response, judge=judge)
            return httpx.Response(
                response.status_code if 200 <= response.status_code < 300 else 200,
                headers=[
                    *_passed_headers(response.headers, also=("content-type",)),
                    (b"content-type", plan.media_type.encode()),
                ],
                stream=run,
                extensions=_passed_extensions(response),
            )
        try:
            return await self._heal_completion(request, wire, plan, response, judge)
        finally:
            await _close_quietly(response)

    async def _parser_error(
        self, wire: WireFormat, response: httpx.Response, plan: HealPlan | None
    ) -> httpx.Response | _ParserError:
        """``response`` (an error status) as is, or read when its body is a tool-parser error.

        A server that could not parse the model's call answers 500 (Ollama, llama-server,
        vLLM): the model's broken call, healed like any rejected call (issue 17, part 4), when
        ``plan`` heals (``None``: the request was not planned, it went up as it came). The body
        is read to know; a body longer than :data:`_ERROR_BODY_CAP` is none of theirs and
        passes unread. A server's refusal of the request's history is the client's to mend: it
        passes as the server answered it, with what toolwire knows added
        (:mod:`.history_refusal`; issue 30), whether the request is healed or not.
        """
        length = response.headers.get("content-length")
        readers = parser_error_readers(wire.provider)
        if not readers or (
            length is not None and length.isdigit() and int(length) > _ERROR_BODY_CAP
        ):
            return response
        pieces = response.aiter_bytes()
        head = bytearray()
        try:
            async for piece in pieces:
                head += piece
                if len(head) > _ERROR_BODY_CAP:
                    # A chunked body with no length, past the cap: none of theirs. It goes on
                    # to the client whole, read no further here.
                    return httpx.Response(
                        response.status_code,
                        headers=_passed_headers(response.headers),
                        stream=_Prefixed(bytes(head), pieces, response),
                        extensions=_passed_extensions(response),
                    )
        except BaseException:
            await _close_quietly(response)
            raise
        await _close_quietly(response)
        content = bytes(head)
        text = content.decode("utf-8", "replace")
        facts = read_parser_error(readers, response.status_code, text)
        if facts is not None and facts.about == "history":
            refused = _rebuilt(response, content)
            refused.headers.update(refusal_headers(facts, plan.repaired if plan else {}))
            return refused
        if facts is None or plan is None or not plan.heal:
            return _rebuilt(response, content)
        return _ParserError(
            response.status_code,
            headers=_passed_headers(response.headers),
            content=content,
            extensions=_passed_extensions(response),
        )

    async def _checked_plan(
        self, wire: WireFormat, content: bytes, *, checked: bool
    ) -> _Planned | Refusal | None:
        """How ``content`` is healed (``None``: it is not), or why it must not go upstream
        (``checked``: the caller found it readable already, see :data:`BODY_CHECKED`).

        The checks of :mod:`toolwire.heal.refusal`: the request's tools are counted, measured
        and compiled by the pipeline's own cache, so the judge of the response finds them
        compiled. A large body is planned and checked in a worker thread (reading 1 MB of
        tools took 30 ms of the event loop); a small one on the loop, its tools compiled in a
        worker thread unless the judge already has them.
        """
        if len(content) > _PLANNED_IN_A_THREAD_ABOVE:
            return await anyio.to_thread.run_sync(self._plan_compiled, wire, content, checked)
        planned = self._plan_now(wire, content, checked)
        if not isinstance(planned, _Uncompiled):
            return planned
        return await anyio.to_thread.run_sync(planned.compiled)

    def _plan_compiled(
        self, wire: WireFormat, content: bytes, checked: bool
    ) -> _Planned | Refusal | None:
        planned = self._plan_now(wire, content, checked)
        return planned.compiled() if isinstance(planned, _Uncompiled) else planned

    def _plan_now(
        self, wire: WireFormat, content: bytes, checked: bool
    ) -> _Planned | Refusal | _Uncompiled | None:
        plan = wire.plan_request(content)
        if plan is None:
            if checked:
                return None
            # Not planned: readable and not healed, or a body msgspec cannot read that a lax
            # upstream may (``NaN``, a BOM, a lone surrogate...): that would go up unhealed in
            # silence, so it is refused, naming why (issue 29, M3).
            return unreadable_refusal(content)
        try:
            tools = read_request(wire.provider, plan.body).tools
        except ConfigurationError as error:
            return Refusal(400, "invalid_request", f"toolwire cannot read this request: {error}")
        if tools is None:
            return _Planned(plan, None)
        # One canonical encoding of the list: the cache's key, and the bound of its sizes.
        key = tool_list_key(tools)
        list_bytes = None if key is None else key.size
        refusal = tools_refusal(tools, self._tool_limits, list_bytes=list_bytes)
        if refusal is not None:
            return refusal
        # The pipeline's own cache (api.py keeps it private; it is this package's to share).
        stages = self.pipeline_for(wire)._judge_stages
        judge = None if key is None else stages.cached(tools, key)
        if judge is not None:
            return _Planned(plan, judge)
        return _Uncompiled(plan, stages.stage_for, tools)

    def _session(self, wire: WireFormat, plan: HealPlan, request: httpx.Request) -> HealSession:
        return HealSession(
            plan.body,
            self.pipeline_for(wire).next_messages,
            wire=wire,
            encoder=wire.encoder(plan),
            max_retries=self._max_retries,
            max_tokens_ceiling=self._ceiling,
            max_tokens_factor=self._factor,
            constrain=request_constraint(self._constrain, request.headers.get(CONSTRAIN_HEADER)),
            observer=self._telemetry.start(
                provider_entry(wire.provider).gen_ai_name, adapted=plan.adapted
            ),
        )

    def _attempt_batches(
        self,
        wire: WireFormat,
        source: Any,
        session: HealSession,
        planned: tuple[object, JudgeStage | None],
    ) -> AsyncGenerator[list[Event]]:
        """The judged batches of the session's current response: judged with the planned judge
        stage while the body sent is the planned one (``planned``: that body and its stage,
        see :class:`_Planned`), looked up again for a retry's body."""
        sent = session.body
        body, judge = planned
        pipeline = self.pipeline_for(wire)
        return pipeline._judged_batches(source, sent, judge if sent is body else None)

    async def send_retry(self, request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
        """Send ``body`` to ``request``'s URL with its headers (the retry of a healed call)."""
        return await self._wrapped.handle_async_request(_with_content(request, _encode(body)))

    async def _heal_completion(
        self,
        request: httpx.Request,
        wire: WireFormat,
        plan: HealPlan,
        response: httpx.Response,
        judge: JudgeStage | None,
    ) -> httpx.Response:
        try:
            content = await read_whole(response)  # capped, once decoded too (issue 29)
        except httpx.RequestError as error:
            # The body broke off (a drop, a stall, garbage): a fault of the network, the
            # session's to answer (the same request once more, or a typed error).
            session = self._session(wire, plan, request)
            try:
                return _with_figures(
                    await self._heal_read_completion(
                        request,
                        wire,
                        plan,
                        session,
                        response,
                        b"",
                        None,
                        judge,
                        session.unread(error),
                    ),
                    session,
                )
            finally:
                session.close()
        parser_error = isinstance(response, _ParserError)
        first = None if parser_error else wire.read_body(content)
        if first is None and not parser_error and _is_json(content):
            return _rebuilt(response, content)  # an error in a 200, another shape: not ours
        session = self._session(wire, plan, request)
        try:
            if parser_error:
                return _with_figures(
                    await self._heal_read_completion(
                        request, wire, plan, session, response, content, None, judge
                    ),
                    session,
                )
            if first is None:
                # Not JSON at all (or not UTF-8): a 200 the client's SDK could not parse. It is
                # the session's unreadable piece, a typed 502 (issue 19, part 7).
                unreadable = ProviderError(
                    f"the upstream's {response.status_code} body is not JSON "
                    f"({len(content)} bytes)",
                    kind="not_json",
                )
                failed = _failed(wire, session.feed(unreadable))
                assert failed is not None  # an unreadable piece always ends in an error
                return _with_figures(failed, session)
            return _with_figures(
                await self._heal_read_completion(
                    request, wire, plan, session, response, content, first, judge
                ),
                session,
            )
        finally:
            session.close()

    async def _heal_read_completion(
        self,
        request: httpx.Request,
        wire: WireFormat,
        plan: HealPlan,
        session: HealSession,
        response: httpx.Response,
        content: bytes,
        first: dict[str, Any] | None,
        judge: JudgeStage | None,
        unread: AttemptEnd | None = None,
    ) -> httpx.Response:
        """Heal ``first``, or the tool-parser error ``response`` when ``first`` is ``None``
        (``unread``: what the session made of a first body that could not be read; ``judge``:
        the judge stage of the planned body's tools, see :class:`_Planned`)."""
        planned = (session.body, judge)
        # The first attempt: the completion, or the error body the pipeline reads as a turn
        # with a rejected call; then each retry's completion, the first of which is the answer.
        source: Any = response if first is None else wire.body_as_stream(first)
        items: list[WireItem] = []
        end = unread
        while True:
            if end is None:
                batches = self._attempt_batches(wire, source, session, planned)
                try:
                    async for batch in batches:
                        items += _fed(session, batch)
                        if session.outcome is not None:
                            break
                finally:
                    await batches.aclose()
                end = session.end_attempt()
            items += end.items
            if end.retry is None:
                break
            try:
                retry = await self.send_retry(request, end.retry.body)
            except httpx.RequestError as error:
                end = session.unread(error)
                continue
            end = None
            if not 200 <= retry.status_code < 300:
                refused = await self._parser_error(wire, retry, plan)
                if isinstance(refused, _ParserError):
                    # The server could not parse the model's output again: the model's broken
                    # call, judged and asked again like the first one while retries are left.
                    source = refused
                    continue
                # Nothing was sent to the client yet: the server's answer is the answer; but
                # sending the whole exchange again would repeat the work already spent.
                session.retry_refused(refused.status_code, b"")
                refused.headers[SHOULD_RETRY] = "false"
                return refused
            try:
                retry_content = await read_whole(retry)
            except httpx.RequestError as error:
                end = session.unread(error)
                continue
            finally:
                await _close_quietly(retry)
            read = wire.read_body(retry_content)
            if read is None:
                items += session.retry_refused(retry.status_code, retry_content)
                break
            if first is None:
                first, response, content = read, retry, retry_content
            source = wire.body_as_stream(read)
        failed = _failed(wire, items, session.error_status)
        if failed is not None:
            return failed
        if first is None:
            # The upstream's only answer was a tool-parser error whose quote held calls that
            # passed (issue 30: a 500 quoting a whole, valid call): they are the answer, a 200
            # in the format's whole shape, since there is no upstream body to fold them into.
            body = wire.healed_body(wire.empty_body(items), items)
            healed = _whole(200, [(b"content-type", b"application/json")], _encode(body))
        elif not session.rewritten:
            return _rebuilt(response, content)
        else:
            healed = _rebuilt(response, _encode(wire.healed_body(first, items)))
        if session.constrained:
            healed.headers[CONSTRAINED_HEADER] = constrained_header(session.constrained)
        return healed


class _ParserError(httpx.Response):
    """An upstream error response whose body (read) is a tool-parser error: the model's call."""


class _Planned(NamedTuple):
    """A request's plan, and the judge stage of its tools when planning found it compiled.

    The response's turn judges with that stage (``Pipeline._judged_batches``) instead of
    looking the tools up again: the lookup takes the digest of their canonical JSON, about
    30 µs for 20 tools, once per request is enough. Only for the planned body itself: a retry's
    body is the pipeline's to look up.
    """

    plan: HealPlan
    judge: JudgeStage | None


class _Uncompiled(NamedTuple):
    """A planned request whose tools are still to be compiled (``compile(tools)``)."""

    plan: HealPlan
    compile: Callable[[object], JudgeStage]
    tools: object

    def compiled(self) -> _Planned | Refusal:
        """The plan with its tools' judge stage, compiled now (the response's turn judges with
        it, so a list seen for the first time is not looked up again), or the refusal."""
        stage = compiled_or_refusal(self.compile, self.tools)
        return stage if isinstance(stage, Refusal) else _Planned(self.plan, stage)


class _HealedStream(httpx.AsyncByteStream):
    """The body of a healed streamed response, produced while the client reads it.

    Closing it (``httpx.Response.aclose``: the client stopped, or was cancelled) closes the
    generator and the upstream response being read, whether or not reading had started.
    """

    def __init__(
        self,
        transport: HealingTransport,
        request: httpx.Request,
        wire: WireFormat,
        plan: HealPlan,
        session: HealSession,
        response: httpx.Response,
        *,
        judge: JudgeStage | None = None,
    ) -> None:
        self._transport = transport
        #: The request's plan: whether the server cannot stream it, and how a retry's refusal
        #: is read (:meth:`HealingTransport._parser_error`).
        self._plan = plan
        self._whole = plan.whole_upstream
        #: The planned body, and the judge stage of its tools (see :class:`_Planned`).
        self._planned = (session.body, judge)
        self._request = request
        self._wire = wire
        self._session = session
        self._current = response
        self._pieces = self._run()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._pieces

    async def aclose(self) -> None:
        try:
            await self._pieces.aclose()
        finally:
            self._session.close()
            await _close_quietly(self._current)

    async def _run(self) -> AsyncGenerator[bytes]:
        session = self._session
        transport = self._transport
        wire = self._wire
        frame = wire.frame
        try:
            while True:
                # The response (or its stream): the runner reads it and closes it on every path.
                source: Any = _body_of(self._current)
                end: AttemptEnd | None = None
                if self._whole and not isinstance(source, _ParserError):
                    # The server cannot stream this request: its whole answer, as a stream (a
                    # body that is no completion goes to the runner as is: an in-band error).
                    try:
                        content = await read_whole(self._current)
                    except httpx.RequestError as error:
                        end = session.unread(error)  # it broke off: a fault of the network
                    else:
                        read = wire.read_body(content)
                        source = content if read is None else wire.body_as_stream(read)
                if end is None:
                    # One piece per read of the upstream, not one per event: what one read
                    # brought goes on in one write.
                    batches = transport._attempt_batches(wire, source, session, self._planned)
                    try:
                        async for batch in batches:
                            items = _fed(session, batch)
                            if items:
                                yield frame(items)
                            if session.outcome is not None:
                                break  # ended early (an unreadable piece): nothing more is read
                    finally:
                        await batches.aclose()
                    end = session.end_attempt()
                while True:
                    if end.items:
                        yield frame(end.items)
                    if end.dropped:
                        raise httpx.RemoteProtocolError(
                            "the upstream stream ended before its finish; toolwire ends this "
                            "one the same way"
                        )
                    if end.retry is None:
                        return
                    try:
                        self._current = await self._transport.send_retry(
                            self._request, end.retry.body
                        )
                    except httpx.RequestError as error:
                        end = session.unread(error)  # not sent: a fault of the network
                        continue
                    break
                status = self._current.status_code
                if not 200 <= status < 300:
                    self._current = await transport._parser_error(wire, self._current, self._plan)
                    if isinstance(self._current, _ParserError):
                        continue  # the model's broken output again: judged like the first
                    body = await _read_capped(self._current)
                    yield frame(session.retry_refused(status, body))
                    return
        finally:
            session.close()
            await _close_quietly(self._current)


def _with_figures(response: httpx.Response, session: HealSession) -> httpx.Response:
    """``response``, the whole answer of ``session``'s exchange, saying what the exchange took
    (:attr:`HealSession.figures`, final now: nothing more is asked): the upstream requests
    tried, the calls toolwire rejected, the calls it passed repaired. Only on a whole answer:
    a stream's headers go out before anything is judged (``docs/healing.md``)."""
    figures = session.figures
    response.headers[ATTEMPTS_HEADER] = str(figures.attempts)
    response.headers[REJECTED_CALLS_HEADER] = str(figures.rejected_calls)
    response.headers[REPAIRED_CALLS_HEADER] = str(figures.repaired_calls)
    return response


def _fed(session: HealSession, batch: list[Event]) -> list[WireItem]:
    """What the client gets of one batch of events, up to the session's end if it came."""
    items: list[WireItem] = []
    for event in batch:
        items += session.feed(event)
        if session.outcome is not None:
            break
    return items


def _body_of(response: httpx.Response) -> Any:
    """What the pipeline reads of an upstream response: the response, or its stream itself.

    A 2xx response with nothing to decode (no ``Content-Encoding``) is its stream, byte for
    byte: read through ``aiter_bytes`` each piece crossed two more async generators (the
    decoder's and ``aiter_raw``'s) for nothing (issue 20). Anything else (an error status, a
    tool-parser error, a compressed body) goes as the response, read as the runner reads one.
    """
    stream = response.stream
    if (
        type(response) is httpx.Response
        and 200 <= response.status_code < 300
        and isinstance(stream, httpx.AsyncByteStream)
        and response.headers.get("content-encoding", "identity") == "identity"
        and not response.is_stream_consumed
    ):
        return stream
    return response


def refused(refusal: Refusal) -> httpx.Response:
    """The response to a refused request: ``refusal``'s status, an OpenAI-shaped error body."""
    error = {
        "message": refusal.message,
        "type": f"toolwire_{refusal.code}",
        "param": None,
        "code": refusal.code,
    }
    return _whole(
        refusal.status, [(b"content-type", b"application/json")], _encode({"error": error})
    )


def _failed(
    wire: WireFormat, items: list[WireItem], status: int = FAILED_STATUS
) -> httpx.Response | None:
    """The response of a non-streamed exchange that ended in toolwire's error: ``status``
    (:data:`FAILED_STATUS`, 504 for a stall), never to be sent again by the SDK."""
    error = wire.error_body(items)
    if error is None:
        return None
    return _whole(
        status,
        [(b"content-type", b"application/json"), (SHOULD_RETRY.encode(), b"false")],
        _encode(error),
    )


def _is_json(content: bytes) -> bool:
    try:
        _decode(content)
    except msgspec.DecodeError:
        return False
    return True


def _with_content(
    request: httpx.Request, content: bytes, *, url: httpx.URL | None = None
) -> httpx.Request:
    """``request`` with another body (and maybe ``url``): same method, URL, headers (less the
    length), extensions."""
    headers = [
        (name, value)
        for name, value in request.headers.raw
        if name.lower() not in (b"content-length", b"transfer-encoding")
    ]
    return httpx.Request(
        request.method,
        url or request.url,
        headers=headers,
        content=content,
        extensions=request.extensions,
    )


def _resendable(request: httpx.Request) -> httpx.Request:
    """``request`` (read), marked :data:`RESENDABLE`: a copy, the client's left as it was."""
    return httpx.Request(
        request.method,
        request.url,
        headers=request.headers.raw,
        content=request.content,
        extensions={**request.extensions, RESENDABLE: True},
    )


def _passed_headers(
    headers: httpx.Headers, *, also: tuple[str, ...] = ()
) -> list[tuple[bytes, bytes]]:
    """The upstream's response headers, less those that describe its bytes (length, encoding).

    ``also`` names more headers to leave out (a healed stream is always an event stream, even
    when the upstream's 200 was not).
    """
    left_out = _BODY_HEADERS.union(also)
    return [
        (name, value)
        for name, value in headers.raw
        if name.decode("latin-1").lower() not in left_out
    ]


def _passed_extensions(response: httpx.Response) -> dict[str, Any]:
    return {
        key: value
        for key, value in response.extensions.items()
        if key in ("http_version", "reason_phrase")
    }


def _rebuilt(response: httpx.Response, content: bytes) -> httpx.Response:
    """A response with ``response``'s status and headers and ``content`` (already decoded)."""
    return _whole(
        response.status_code,
        _passed_headers(response.headers),
        content,
        _passed_extensions(response),
    )


def _whole(
    status: int,
    headers: list[tuple[bytes, bytes]],
    content: bytes,
    extensions: dict[str, Any] | None = None,
) -> httpx.Response:
    """A response whose body is ``content``, as a stream not yet read.

    ``httpx.Response(content=...)`` counts as read: a caller that streams what a transport
    returns (``aiter_raw``, as the ``toolwire serve`` proxy does) would get ``StreamConsumed``.
    """
    return httpx.Response(
        status,
        headers=[*headers, (b"content-length", str(len(content)).encode())],
        stream=httpx.ByteStream(content),
        extensions=extensions or {},
    )


class _Prefixed(httpx.AsyncByteStream):
    """A body whose first bytes were already read: those, then the rest, as it comes."""

    def __init__(self, head: bytes, rest: AsyncIterator[bytes], response: httpx.Response) -> None:
        self._head = head
        self._rest = rest
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._head
        async for piece in self._rest:
            yield piece

    async def aclose(self) -> None:
        await _close_quietly(self._response)


async def _read_capped(response: httpx.Response) -> bytes:
    """Up to :data:`_ERROR_BODY_CAP` bytes of ``response``'s body, then close it."""
    body = bytearray()
    try:
        async for piece in response.aiter_bytes():
            body += piece
            if len(body) >= _ERROR_BODY_CAP:
                break
    except httpx.HTTPError:
        pass  # what was read is quoted; the status says the rest
    finally:
        await _close_quietly(response)
    return bytes(body[:_ERROR_BODY_CAP])


async def _close_quietly(response: httpx.Response) -> None:
    """Close ``response`` at once, even in a cancelled scope; a failing close changes nothing."""
    if response.is_closed:
        return  # (a healed stream closes its response on every path, then once more)
    with anyio.CancelScope(shield=True):
        try:
            await response.aclose()
        except Exception:  # the connection is gone either way
            pass
