"""What ``toolwire serve`` refuses before anything goes upstream (issue 19), sans-I/O.

Each check returns a :class:`Refusal` (the status, the error code and the message of the typed,
OpenAI-shaped error the proxy answers) or ``None`` when the request may go on:

- :func:`path_refusal`: a path that could leave ``/v1`` once the upstream's URL is built. The
  server decodes the path once and httpx removes dot segments, so ``/v1/../X``,
  ``/v1/%2e%2e/X``, ``/v1/..%2fX`` or ``/v1/models/../../X`` reached ``<upstream host>/X``
  (Ollama's ``/api/delete``, llama.cpp's ``/slots``, another tenant's prefix on a gateway).
  Refused: a segment that, decoded once or twice, is ``.`` or ``..`` or holds a slash, a
  backslash, ``?``, ``#``, ``;`` or a control character. Every other path keeps the
  upstream's base. (``;`` starts a path parameter: Java gateways read ``/v1/..;/admin`` as
  ``/v1/../admin``, issue 29, L4.)
- :func:`body_refusal` (:mod:`toolwire.heal.request_body`, where the library shell reads
  it too): a body toolwire would read differently from a lax upstream: duplicate
  keys (which one wins differs between parsers), a ``stream`` that is not a boolean or
  ``tools`` that are not a list (``"stream": "true"`` is streamed by some servers and not by
  toolwire), JSON nested too deeply to read; and a body the healing cannot read at all
  (``NaN``, ``1e400``, a byte order mark, a lone surrogate, bytes that are not UTF-8: Python's
  ``json`` reads most of them, msgspec, which plans the healing, none), which went upstream
  unhealed, with no error, until issue 29 (M3).
- :func:`head_refusal` and :func:`framing_refusal`: a head with too many headers or too many
  bytes of them (431), and ``Content-Length`` beside ``Transfer-Encoding`` (400: RFC 9112 6.1
  says such a message must be handled as an error and the connection closed; a gateway in
  front that frames by the length would see another request in the body: request smuggling).

The tools of a healed request are checked by the healing itself
(:mod:`toolwire.heal.refusal`, in :class:`~toolwire.heal.transport.HealingTransport`), so that
the library shell refuses the same requests and the list is compiled once.

:func:`forwarded_headers` is the request headers that go upstream: never the hop-by-hop ones,
nor those the client's ``Connection`` names (RFC 9110 7.6.1), nor ``Expect``, nor a client's
own ``Forwarded`` / ``X-Forwarded-*`` / ``X-Real-IP`` (the proxy adds none: an upstream that
trusts them must hear them from a proxy it trusts, not from a client), nor the headers with
which some frameworks let a request name another method or URL than its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from urllib.parse import unquote

from ..heal.refusal import Refusal
from ..heal.request_body import READ_AT_ONCE_UP_TO as READ_AT_ONCE_UP_TO
from ..heal.request_body import body_refusal as body_refusal

__all__ = [
    "HOP_BY_HOP",
    "READ_AT_ONCE_UP_TO",
    "Refusal",
    "body_refusal",
    "declared_length",
    "forwarded_headers",
    "framing_refusal",
    "head_refusal",
    "path_refusal",
]

#: Headers that belong to one connection, never forwarded either way (RFC 9110 7.6.1).
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
#: Upstream, the proxy sets ``host`` (the upstream's) and the length (of the body it sends), a
#: proxy's own credentials stop here, ``Expect`` is answered by the server in front (the body
#: is read whole before anything is sent), and a client's claims about where it came from are
#: dropped.
_REQUEST_DROPPED = HOP_BY_HOP | {
    b"proxy-authorization",
    b"host",
    b"content-length",
    b"expect",
    b"forwarded",
    b"x-real-ip",
    # A request that names another URL or method than its own: read by IIS's URL Rewrite and
    # Symfony before 4.1.3 (X-Original-URL, X-Rewrite-URL: CVE-2018-14773), by Rails, Express's
    # method-override and Google's APIs (X-HTTP-Method-Override, X-Method-Override), by OData
    # (X-HTTP-Method). An upstream behind the proxy could act on them; no client needs them.
    b"x-original-url",
    b"x-rewrite-url",
    b"x-override-url",
    b"x-http-method-override",
    b"x-http-method",
    b"x-method-override",
    b"x-original-method",
}
_CLIENT_CLAIMS_PREFIX = b"x-forwarded-"
#: Characters that change a URL's structure once a decoded segment is put back into one.
_STRUCTURAL = frozenset("/\\?#;")
#: A path with nothing to decode (no ``%``) whose segments are neither ``.`` nor ``..`` and hold
#: none of the characters :func:`_unsafe` refuses: decoded once or twice it is itself, so it is
#: safe without the loop (26 us of every request for ``/v1/chat/completions``; this, ~1 us).
_PLAIN_PATH = re.compile(r"[^/]*(?:/(?!\.\.?(?:/|\Z))[^/\\?#;%\x00-\x1f\x7f]*)*")


def path_refusal(path: str, raw_path: bytes | None) -> Refusal | None:
    """The refusal of a ``/v1/...`` path that could reach outside the upstream's base path.

    ``path`` is the server's decoded path, ``raw_path`` the bytes the client sent (``None``
    when the server gives none).
    """
    forms = [path]
    if raw_path is not None:
        forms.append(raw_path.decode("latin-1"))
    for form in forms:
        if _PLAIN_PATH.fullmatch(form):
            continue
        for segment in form.split("/")[1:]:
            once = unquote(segment)
            for decoded in (segment, once, unquote(once)):
                if decoded in (".", "..") or _unsafe(decoded):
                    return Refusal(
                        400,
                        "invalid_path",
                        "toolwire serve refuses a path segment that is '.' or '..' or holds "
                        "an encoded slash, a backslash, '?', '#', ';' or a control character, "
                        "decoded once or twice",
                    )
    return None


def _unsafe(segment: str) -> bool:
    return any(char in _STRUCTURAL or ord(char) < 0x20 or ord(char) == 0x7F for char in segment)


def forwarded_headers(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The client's headers that go upstream (see the module docstring)."""
    pairs = [(name.lower(), value) for name, value in headers]
    named = {
        token.strip().lower()
        for name, value in pairs
        if name == b"connection"
        for token in value.split(b",")
    }
    return [
        (name, value)
        for name, value in pairs
        if name not in _REQUEST_DROPPED
        and name not in named
        and not name.startswith(_CLIENT_CLAIMS_PREFIX)
    ]


def head_refusal(
    headers: Sequence[tuple[bytes, bytes]], max_headers: int, max_bytes: int
) -> Refusal | None:
    """The 431 of a head with more than ``max_headers`` headers or ``max_bytes`` of them.

    uvicorn's h11 limits only a head that arrives in pieces (``h11_max_incomplete_event_size``):
    one that arrives in one read, 100 KB of it or 3,000 headers, was forwarded as sent.
    """
    if len(headers) > max_headers:
        return Refusal(
            431,
            "headers_too_large",
            f"the request has {len(headers)} headers; toolwire serve takes {max_headers} at "
            "most (max_headers)",
        )
    size = sum(len(name) + len(value) for name, value in headers)
    if size > max_bytes:
        return Refusal(
            431,
            "headers_too_large",
            f"the request's headers are {size} bytes; toolwire serve takes {max_bytes} at most "
            "(max_header_bytes)",
        )
    return None


def framing_refusal(headers: Iterable[tuple[bytes, bytes]]) -> Refusal | None:
    """The 400 of a request framed two ways: ``Content-Length`` and ``Transfer-Encoding``."""
    names = {name.lower() for name, _ in headers}
    if b"content-length" in names and b"transfer-encoding" in names:
        return Refusal(
            400,
            "invalid_request",
            "the request has both Content-Length and Transfer-Encoding (RFC 9112 6.1: refused, "
            "and the connection closed)",
        )
    return None


def declared_length(headers: Iterable[tuple[bytes, bytes]]) -> int | None:
    """The request's ``Content-Length``, when it declares one."""
    for name, value in headers:
        if name.lower() == b"content-length" and value.isdigit():
            return int(value)
    return None
