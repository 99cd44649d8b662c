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
- :func:`body_refusal`: a body toolwire would read differently from a lax upstream: duplicate
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

import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import unquote

import jiter
import msgspec

from ..heal.refusal import Refusal

__all__ = [
    "HOP_BY_HOP",
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


def _unique_keys(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKeyError(key)
        seen[key] = value
    return seen


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _NoJSONNumberError(ValueError):
    """A number Python's ``json`` reads and JSON has none for (``NaN``, ``1e400``)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _no_constant(text: str) -> Any:
    raise _NoJSONNumberError(text)


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise _NoJSONNumberError(text)
    return number


#: A UTF-16 surrogate escape with no partner (what JavaScript writes for half an emoji).
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
_BOM = b"\xef\xbb\xbf"


#: The largest body :func:`body_refusal` reads with jiter (the app reads larger ones in a worker
#: thread, ``serve/app.py``).
READ_AT_ONCE_UP_TO = 64 * 1024


def body_refusal(content: bytes) -> Refusal | None:
    """The refusal of a body toolwire would read differently from the upstream, or ``None``.

    A body that is not JSON passes (untouched, as it did): it is not toolwire's to read.

    A body of up to :data:`READ_AT_ONCE_UP_TO` bytes (read on the event loop) is read by jiter
    first: in Rust, duplicate keys caught as it goes, in about 0.6x the time of the standard
    library's parser calling a Python check per object (``docs/serve.md``). Anything jiter
    does not read whole (a duplicate key, nesting past its depth of 200, ``NaN``, a byte order
    mark, a lone surrogate, no JSON at all), or that msgspec then refuses (jiter reads ``1e400``
    as infinity), is read again by the standard library, which gives the verdict and the exact
    key as before. (msgspec's read costs 3 us for a 0.5 KB body, 32 us for 23 KB; a regular
    expression looking for such numbers cost 200 to 600 us.) A larger body is the standard
    library's alone: it is read in a worker thread, and the Python check per object lets the
    event loop take the GIL back as it goes, where jiter would hold it for the whole body
    (64 ms for 10 MB).

    The body is the request of an endpoint the healing reads (the app asks only then): one that
    is not JSON msgspec reads (it plans the healing) is refused, naming why. It used to go
    upstream unhealed in silence (issue 29, M3): Python's ``json`` reads ``NaN``, ``1e400``, a
    byte order mark and a lone surrogate, and many servers are written with it.
    """
    if len(content) > READ_AT_ONCE_UP_TO:
        return _refusal_read_slowly(content)
    try:
        body = jiter.from_json(content, catch_duplicate_keys=True, allow_inf_nan=False)
        msgspec.json.decode(content)  # the healing's own reader must read it too
    except (ValueError, msgspec.DecodeError):
        return _refusal_read_slowly(content)
    return _typed_refusal(body)


def _refusal_read_slowly(content: bytes) -> Refusal | None:
    if content.startswith(_BOM):
        return _unreadable("it starts with a UTF-8 byte order mark, which JSON does not allow")
    try:
        body = json.loads(
            content,
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
            parse_float=_finite,
        )
    except _DuplicateKeyError as error:
        return Refusal(
            400,
            "invalid_request",
            f"the request body has the key {error.key!r} twice in one object; toolwire "
            "and the upstream could read different values",
        )
    except _NoJSONNumberError as error:
        return _unreadable(f"it holds {error.text[:40]}, a number JSON has no form for")
    except RecursionError:
        return Refusal(400, "invalid_request", "the request body is nested too deeply")
    except UnicodeDecodeError:
        return _unreadable("it is not UTF-8")
    except ValueError:
        return _unreadable("it is not JSON")
    refusal = _typed_refusal(body)
    if refusal is not None:
        return refusal
    try:
        msgspec.json.decode(content)  # the healing's own reader must read it too
    except msgspec.DecodeError as error:
        if _LONE_SURROGATE.search(content):
            return _unreadable(
                "it holds a lone UTF-16 surrogate escape (such as \\ud83d, half of an "
                "emoji), which no UTF-8 text can carry"
            )
        return _unreadable(str(error))
    return None


def _unreadable(why: str) -> Refusal:
    return Refusal(
        400,
        "invalid_request",
        f"toolwire cannot read this request's JSON to heal it: {why}. It was not sent upstream, "
        "where it would have gone unhealed",
    )


def _typed_refusal(body: object) -> Refusal | None:
    """The refusal of a JSON body whose ``stream`` or ``tools`` has a type no API takes."""
    if isinstance(body, dict):
        if "stream" in body and not isinstance(body["stream"], bool | None):
            return _wrong_type("stream", "a boolean", body["stream"])
        if "tools" in body and not isinstance(body["tools"], list | None):
            return _wrong_type("tools", "a list", body["tools"])
    return None


def _wrong_type(key: str, expected: str, value: object) -> Refusal:
    got = type(value).__name__
    return Refusal(400, "invalid_request", f"{key!r} must be {expected}, not {got} {value!r:.40}")
