"""What ``toolwire serve`` refuses before anything goes upstream (issue 19), sans-I/O.

Each check returns a :class:`Refusal` (the status, the error code and the message of the typed,
OpenAI-shaped error the proxy answers) or ``None`` when the request may go on:

- :func:`path_refusal`: a path that could leave ``/v1`` once the upstream's URL is built. The
  server decodes the path once and httpx removes dot segments, so ``/v1/../X``,
  ``/v1/%2e%2e/X``, ``/v1/..%2fX`` or ``/v1/models/../../X`` reached ``<upstream host>/X``
  (Ollama's ``/api/delete``, llama.cpp's ``/slots``, another tenant's prefix on a gateway).
  Refused: a segment that, decoded once or twice, is ``.`` or ``..`` or holds a slash, a
  backslash, ``?``, ``#`` or a control character. Every other path keeps the upstream's base.
- :func:`body_refusal`: a body toolwire would read differently from a lax upstream: duplicate
  keys (which one wins differs between parsers), a ``stream`` that is not a boolean or
  ``tools`` that are not a list (``"stream": "true"`` is streamed by some servers and not by
  toolwire), JSON nested too deeply to read.

The tools of a healed request are checked by the healing itself
(:mod:`toolwire.heal.refusal`, in :class:`~toolwire.heal.transport.HealingTransport`), so that
the library shell refuses the same requests and the list is compiled once.

:func:`forwarded_headers` is the request headers that go upstream: never the hop-by-hop ones,
nor those the client's ``Connection`` names (RFC 9110 7.6.1), nor ``Expect``, nor a client's
own ``Forwarded`` / ``X-Forwarded-*`` / ``X-Real-IP`` (the proxy adds none: an upstream that
trusts them must hear them from a proxy it trusts, not from a client).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import unquote

import jiter

from ..heal.refusal import Refusal

__all__ = [
    "HOP_BY_HOP",
    "Refusal",
    "body_refusal",
    "forwarded_headers",
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
}
_CLIENT_CLAIMS_PREFIX = b"x-forwarded-"
#: Characters that change a URL's structure once a decoded segment is put back into one.
_STRUCTURAL = frozenset("/\\?#")
#: A path with nothing to decode (no ``%``) whose segments are neither ``.`` nor ``..`` and hold
#: none of the characters :func:`_unsafe` refuses: decoded once or twice it is itself, so it is
#: safe without the loop (26 us of every request for ``/v1/chat/completions``; this, ~1 us).
_PLAIN_PATH = re.compile(r"[^/]*(?:/(?!\.\.?(?:/|\Z))[^/\\?#%\x00-\x1f\x7f]*)*")


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
                        "an encoded slash, a backslash, '?', '#' or a control character, "
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


#: The largest body :func:`body_refusal` reads with jiter (the app reads larger ones in a worker
#: thread, ``serve/app.py``).
READ_AT_ONCE_UP_TO = 64 * 1024


def body_refusal(content: bytes) -> Refusal | None:
    """The refusal of a body toolwire would read differently from the upstream, or ``None``.

    A body that is not JSON passes (untouched, as it did): it is not toolwire's to read.

    A body of up to :data:`READ_AT_ONCE_UP_TO` bytes (read on the event loop) is read by jiter
    first: in Rust, duplicate keys caught as it goes, in about 0.6x the time of the standard
    library's parser calling a Python check per object (``docs/serve.md``). Anything jiter
    does not read whole (a duplicate key, nesting past its depth of 200, a byte order mark, a
    lone surrogate, no JSON at all) is read again by the standard library, which gives the
    verdict and the exact key as before. A larger body is the standard library's alone: it is
    read in a worker thread, and the Python check per object lets the event loop take the GIL
    back as it goes, where jiter would hold it for the whole body (64 ms for 10 MB).
    """
    if len(content) > READ_AT_ONCE_UP_TO:
        return _refusal_read_slowly(content)
    try:
        body = jiter.from_json(content, catch_duplicate_keys=True)
    except ValueError:
        return _refusal_read_slowly(content)
    return _typed_refusal(body)


def _refusal_read_slowly(content: bytes) -> Refusal | None:
    try:
        body = json.loads(content, object_pairs_hook=_unique_keys)
    except _DuplicateKeyError as error:
        return Refusal(
            400,
            "invalid_request",
            f"the request body has the key {error.key!r} twice in one object; toolwire "
            "and the upstream could read different values",
        )
    except RecursionError:
        return Refusal(400, "invalid_request", "the request body is nested too deeply")
    except ValueError:  # not JSON (UnicodeDecodeError is one): not toolwire's to read
        return None
    return _typed_refusal(body)


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
