"""What ``toolwire serve`` is configured with: one checked, immutable settings object.

The command line, a TOML file (``--config``) and Python all end here, so every value is checked
once, the same way, before the server starts: a typo in a key, a port out of range, an upstream
that is no ``http(s)`` URL is a :class:`~toolwire.core.errors.ConfigurationError` that names
it, not a failure on the first request.
"""

from __future__ import annotations

import contextlib
import tomllib
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..adapters.registry import upstream_names
from ..core.errors import ConfigurationError
from ..stages.judge_process import DEFAULT_CHECK_BUDGET

__all__ = ["ServeSettings", "load_settings", "worker_count"]


class ServeSettings(BaseModel):
    """The settings of one proxy (see ``docs/serve.md`` for what each one is for).

    ``upstream`` is the base URL the clients would otherwise use, ``/v1`` included
    (``http://127.0.0.1:8080/v1``, ``https://api.openai.com/v1``,
    ``https://api.anthropic.com/v1``): the proxy serves ``/v1/...`` and sends ``/v1/X`` to
    ``upstream + /X``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    upstream: str
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    #: ``False``: a bare pass-through proxy (what the load test measures healing against).
    heal: bool = True
    #: What kind of server the upstream is, for every endpoint healed: a Chat Completions
    #: server profile (``llama-cpp`` for llama-cpp-python, ``llama-server``, ``vllm``...) or
    #: ``ollama``. On a local server, calls left in the text are read on Chat Completions,
    #: Messages, Responses and ``/api/chat`` alike (``docs/serve.md``).
    provider: str = "openai-chat"
    max_retries: int = Field(default=2, ge=0, le=10)
    max_tokens_ceiling: int | None = Field(default=None, ge=1)
    #: With ``max_tokens_ceiling``: a retry after a cut raises the limit to no more than this
    #: many times the client's own (``docs/healing.md``, "The retry's token budget").
    max_tokens_factor: float | None = Field(default=None, ge=1)
    #: The constrained re-ask (``docs/healing.md``): ``False`` turns it off for every request;
    #: the tools in ``unconstrained_tools`` are never constrained.
    constrain: bool = True
    unconstrained_tools: tuple[str, ...] = ()
    truncated_calls: Literal["reject", "allow"] = "reject"
    #: Seconds a call whose schema check is too costly for the event loop may wait for a
    #: worker process, then as many for its check; past either it is rejected as ``unchecked``
    #: (``Pipeline(judge_budget=...)``, ``docs/repairs.md``). No "no budget" here: on a shared
    #: proxy such a check would hold every client's event loop while it runs (issue 29, H2).
    judge_budget: float = Field(default=DEFAULT_CHECK_BUDGET, gt=0, allow_inf_nan=False)
    #: The largest request body accepted (HTTP 413 above it).
    max_request_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    #: The bodies of every request in flight together (HTTP 503 above it): what bounds the
    #: proxy's memory whatever the number of clients (docs/serve.md: about 4.6 bytes of memory
    #: per byte of body at the peak).
    max_request_bytes_in_flight: int = Field(default=160 * 1024 * 1024, ge=1024)
    #: The tools one healed request may offer: how many, the JSON size of one, of them all
    #: (HTTP 400 above; ``toolwire.heal.refusal`` says why each bounds the work of a request).
    max_tools: int = Field(default=512, ge=1)
    max_tool_schema_bytes: int = Field(default=64 * 1024, ge=1024)
    max_tools_bytes: int = Field(default=1024 * 1024, ge=1024)
    #: Connections to the upstream, across every client (each stream holds one).
    max_connections: int = Field(default=1000, ge=1)
    #: How long a request waits for one of those connections before it is the proxy's own
    #: 503 ``server_busy`` (issue 29, M2: the pool is the proxy's, not the upstream's).
    pool_timeout: float = Field(default=2.0, gt=0)
    connect_timeout: float = Field(default=10.0, gt=0)
    #: The longest silence of an upstream mid-response (a local model may think for minutes).
    read_timeout: float = Field(default=600.0, gt=0)
    #: How long a stopping server lets in-flight responses finish.
    graceful_shutdown_seconds: float = Field(default=30.0, ge=0)
    #: Connections from clients one process serves (issue 29, H3); past it a request is a 503
    #: ``server_busy`` at once and ``/readyz`` fails. Lowered at start-up to what the process's
    #: file descriptors allow (``docs/serve.md``, "Deadlines and limits").
    max_client_connections: int = Field(default=1000, ge=1)
    #: The deadlines of what a client controls (``docs/serve.md``, "Deadlines and limits"):
    #: the whole request head, from its first byte (or the connection's opening);
    head_timeout: float = Field(default=10.0, gt=0)
    #: the body: it must arrive within ``body_timeout`` plus one second per ``min_body_rate``
    #: bytes received (a minimum average rate, after a grace);
    body_timeout: float = Field(default=10.0, gt=0)
    min_body_rate: int = Field(default=16 * 1024, ge=1)
    #: an idle kept-alive connection (uvicorn's ``timeout_keep_alive``);
    keep_alive_timeout: float = Field(default=5.0, gt=0)
    #: a client that reads nothing of what is written to it: its connection is dropped once
    #: the writes wait this long;
    write_timeout: float = Field(default=30.0, gt=0)
    #: and, when set, a whole response (a stream kept alive by pings never ends otherwise).
    response_timeout: float | None = Field(default=None, gt=0)
    #: A request head's headers: how many, and their bytes together (HTTP 431 above).
    max_headers: int = Field(default=100, ge=1)
    max_header_bytes: int = Field(default=32 * 1024, ge=1024)
    #: Where spans and metrics go (an OTLP/HTTP collector); ``None``: the
    #: ``OTEL_EXPORTER_OTLP_ENDPOINT`` environment variable, or nowhere.
    otlp_endpoint: str | None = None
    capture_content: bool = False
    log_level: Literal["critical", "error", "warning", "info", "debug"] = "info"
    #: Server processes on the one socket (``toolwire serve --workers``; ``"auto"``: one per
    #: core this process may use). The app itself ignores it: each worker is one app.
    workers: int | Literal["auto"] = 1

    @field_validator("upstream", "otlp_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")) or "://" == value[-3:]:
            raise ValueError(f"must be an http:// or https:// URL, got {value!r}")
        return value.rstrip("/")

    @field_validator("workers", mode="before")
    @classmethod
    def _worker_count(cls, value: object) -> int | Literal["auto"]:
        return worker_count(value)

    @model_validator(mode="after")
    def _one_body_fits_in_flight(self) -> ServeSettings:
        if self.max_request_bytes > self.max_request_bytes_in_flight:
            raise ValueError(
                "max_request_bytes must not be over max_request_bytes_in_flight "
                f"({self.max_request_bytes} > {self.max_request_bytes_in_flight})"
            )
        return self

    @field_validator("provider")
    @classmethod
    def _upstream_kind(cls, value: str) -> str:
        names = upstream_names()
        if value not in names:
            raise ValueError(f"must name the kind of server the upstream is ({', '.join(names)})")
        return value


def worker_count(value: object) -> int | Literal["auto"]:
    """``workers``: ``"auto"``, or a whole number of at least 1 (or its digits, from a flag)."""
    if isinstance(value, str) and value != "auto":
        with contextlib.suppress(ValueError):
            value = int(value)
    if value == "auto" or (type(value) is int and value >= 1):
        return value
    raise ValueError(f'must be a whole number of at least 1, or "auto"; got {value!r}')


def load_settings(config: Path | None = None, **overrides: Any) -> ServeSettings:
    """The settings from a TOML file (top-level keys), with ``overrides`` (not ``None``) on top."""
    values: dict[str, Any] = {}
    if config is not None:
        try:
            values = tomllib.loads(config.read_text(encoding="utf-8"))
        except OSError as error:
            raise ConfigurationError(f"cannot read {config}: {error.strerror or error}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise ConfigurationError(f"{config} is not TOML: {error}") from None
    values.update({key: value for key, value in overrides.items() if value is not None})
    try:
        return ServeSettings(**values)
    except pydantic.ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc']) or 'settings'}: "
            f"{problem['msg'].removeprefix('Value error, ')}"
            for problem in error.errors()
        )
        where = f" in {config}" if config is not None else ""
        raise ConfigurationError(f"toolwire serve settings{where}: {problems}") from None
