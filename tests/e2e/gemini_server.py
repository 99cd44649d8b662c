"""A scripted loopback server that speaks the Gemini API's streaming protocol.

``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` answers the next scripted SSE body
(``data:`` lines, ``\\r\\n\\r\\n`` separators, no terminator, ``Transfer-Encoding: chunked``
with one HTTP chunk per event), as the Gemini API does; ``:generateContent`` answers it as one
body (:func:`whole_body`); Vertex's ``/v1/projects/.../publishers/google/models/...`` paths
are served the same way. Every request is recorded; the thread,
the script and the HTTP plumbing are shared by every provider's server (``loopback.py``).

Like the real API, it refuses (HTTP 400, ``INVALID_ARGUMENT``) a request whose ``contents`` are
not well formed, checked here with the standard library so that it shares no code with
toolwire's own check:

- a content with no parts;
- a model turn's function calls not answered by the next content with exactly one
  ``functionResponse`` per ``functionCall``, in order, names (and ids, when given) matching, and
  ``response`` an object ("Please ensure that the number of function response parts is equal to
  the number of function call parts of the function call turn.");
- ``functionCall.args`` that is not an object;
- Gemini 3's rule: the first ``functionCall`` part of each model turn must carry a
  ``thoughtSignature`` ("Function call is missing a thought_signature"), and every signature
  must be one this server issued (compared as bytes: the API reads base64 in either alphabet,
  and the google-genai SDK sends the URL-safe one), or Google's documented
  ``skip_thought_signature_validator``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .loopback import Loopback, LoopbackHandler, ScriptedServer

MODEL = "gemini-3-pro-preview"
SENTINEL = "skip_thought_signature_validator"
_PATH = re.compile(
    r"(/v1beta|/v1/projects/[^/]+/locations/[^/]+/publishers/google)/models/(?P<model>[^/:]+)"
    r":(?P<method>streamGenerateContent|generateContent)"
)


def signature(turn: int) -> str:
    """The thoughtSignature the scripted model sends in ``turn`` (standard base64)."""
    return base64.b64encode(f"signature of turn {turn}: ".encode() + bytes(range(40))).decode()


def _signature_bytes(value: object) -> bytes | None:
    if not isinstance(value, str):
        return None
    padded = value + "=" * (-len(value) % 4)
    try:
        return base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return None


@dataclass
class ScriptedGeminiServer(ScriptedServer[bytes]):
    """The script (SSE bodies, answered in order) and what came in; one test at a time."""

    paths: list[str] = field(default_factory=list)
    issued: set[bytes] = field(default_factory=set)

    def script(self, *replies: bytes) -> None:
        """Queue SSE bodies; the signatures in them become valid for later requests."""
        with self._lock:
            super().script(*replies)
            for reply in replies:
                for found in re.findall(rb'"thoughtSignature": "([^"]+)"', reply):
                    decoded = _signature_bytes(found.decode())
                    assert decoded is not None
                    self.issued.add(decoded)

    def next_reply(self, path: str, request: dict[str, Any]) -> bytes | None:
        with self._lock:
            self.paths.append(path)
            return self.take(request)


def contents_errors(contents: Any, issued: set[bytes]) -> list[str]:
    """What the Gemini API refuses in ``contents`` (see the module docstring)."""
    if not isinstance(contents, list) or not contents:
        return ["contents must be a non-empty list"]
    valid = issued | {_signature_bytes(SENTINEL)}
    errors: list[str] = []
    pending: list[dict[str, Any]] = []
    for position, content in enumerate(contents):
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list) or not parts:
            errors.append(f"contents[{position}].parts must not be empty")
            continue
        for part in parts:
            if (
                "thoughtSignature" in part
                and _signature_bytes(part["thoughtSignature"]) not in valid
            ):
                errors.append(f"contents[{position}]: corrupted thought signature")
        responses = [part["functionResponse"] for part in parts if "functionResponse" in part]
        if pending or responses:
            names = [(c.get("name"), c.get("id")) for c in pending]
            got = [(r.get("name"), r.get("id")) for r in responses]
            if len(got) != len(names):
                errors.append(
                    f"contents[{position}]: {len(got)} function response parts for "
                    f"{len(names)} function call parts"
                )
            for (name, call_id), (got_name, got_id) in zip(names, got, strict=False):
                if got_name != name or (call_id is not None and got_id != call_id):
                    errors.append(f"contents[{position}]: response {got_name!r} for call {name!r}")
            for response in responses:
                if not isinstance(response.get("response"), dict):
                    errors.append(f"contents[{position}]: functionResponse.response not an object")
        pending = []
        if content.get("role") == "model":
            calls = [part for part in parts if "functionCall" in part]
            if calls and "thoughtSignature" not in calls[0]:
                errors.append(
                    f"contents[{position}]: function call {calls[0]['functionCall'].get('name')!r}"
                    " is missing a thought_signature"
                )
            for part in calls:
                function = part["functionCall"]
                if not isinstance(function.get("args", {}), dict):
                    errors.append(f"contents[{position}]: functionCall.args must be an object")
                pending.append(function)
    if pending:
        errors.append("the last model turn's function calls have no responses")
    return errors


class _Handler(LoopbackHandler[ScriptedGeminiServer]):
    def do_POST(self) -> None:
        request = self.read_json()
        url = urlsplit(self.path)
        reply = self.script.next_reply(self.path, request)
        match = _PATH.fullmatch(url.path)
        problems = []
        whole = match is not None and match["method"] == "generateContent"
        if match is None or (not whole and parse_qs(url.query).get("alt") != ["sse"]):
            problems.append(f"unknown endpoint {self.path}")
        if not self.headers.get("x-goog-api-key"):
            problems.append("no API key")
        problems += contents_errors(request.get("contents"), self.script.issued)
        if reply is None:
            problems.append("no scripted reply left")
        if problems:
            self.script.refuse(problems)
            error = {"code": 400, "message": "; ".join(problems), "status": "INVALID_ARGUMENT"}
            self.send_json(400, {"error": error}, "application/json; charset=UTF-8")
            return
        assert reply is not None
        if whole:
            # generateContent: one body, the scripted chunks' parts folded as the API writes it.
            self.send_json(200, whole_body(reply), "application/json; charset=UTF-8")
            return
        self.send_stream(_events(reply), "text/event-stream")


def _events(body: bytes) -> list[bytes]:
    """A Gemini SSE body split into its events, each with its CRLF separator."""
    return [event + b"\r\n\r\n" for event in body.split(b"\r\n\r\n") if event.strip()]


def whole_body(reply: bytes) -> dict[str, Any]:
    """The ``generateContent`` body of a scripted SSE reply: its chunks' parts in one candidate,
    the last finish, usage and ids (text parts of one kind joined, as the API writes them)."""
    chunks = [json.loads(event[6:]) for event in _events(reply)]
    parts: list[dict[str, Any]] = []
    body: dict[str, Any] = {}
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    for item in chunks:
        body.update({k: v for k, v in item.items() if k != "candidates"})
        for found in item.get("candidates", [])[:1]:
            for part in found.get("content", {}).get("parts", []):
                last = parts[-1] if parts else None
                if (
                    last is not None
                    and "text" in part
                    and "text" in last
                    and last.get("thought") == part.get("thought")
                    and "thoughtSignature" not in last
                ):
                    last["text"] += part["text"]
                    if "thoughtSignature" in part:
                        last["thoughtSignature"] = part["thoughtSignature"]
                elif part.get("text") != "" or "thoughtSignature" in part:
                    parts.append(dict(part))
            candidate.update({k: v for k, v in found.items() if k != "content"})
    body["candidates"] = [candidate]
    return body


def running_gemini_server() -> Loopback[ScriptedGeminiServer]:
    """Serve a :class:`ScriptedGeminiServer` in a ``with`` block."""
    return Loopback(ScriptedGeminiServer(), _Handler)


# -- replies, in Gemini's wire format ----------------------------------------------------------


def sse(*chunks: dict[str, Any]) -> bytes:
    """Gemini framing: ``data:`` lines with ``": "`` spacing, CRLF separators, no terminator."""
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n" for chunk in chunks)


def chunk(
    *parts: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    """One streamed GenerateContentResponse."""
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate]}
    if usage is not None:
        out["usageMetadata"] = usage
    out["modelVersion"] = MODEL
    out["responseId"] = f"scripted-{id(out):x}"
    return out


def cut_streamed_call_reply(turn: int, name: str, pieces: list[tuple[str, str]]) -> bytes:
    """A Vertex-style streamed call cut at ``maxOutputTokens``: header, string pieces, then
    ``MAX_TOKENS`` with no end piece (the shape of ``max_tokens_mid_partial_args.derived.sse``).
    """
    chunks = [
        chunk(
            {
                "functionCall": {"name": name, "willContinue": True},
                "thoughtSignature": signature(turn),
            }
        )
    ]
    for path, text in pieces:
        arg = {"jsonPath": path, "stringValue": text, "willContinue": True}
        chunks.append(chunk({"functionCall": {"partialArgs": [arg], "willContinue": True}}))
    chunks.append(
        chunk(
            {"text": ""},
            finish="MAX_TOKENS",
            usage={"promptTokenCount": 40, "candidatesTokenCount": 32, "totalTokenCount": 72},
        )
    )
    return sse(*chunks)


def whole_call_reply(turn: int, name: str, args: dict[str, Any]) -> bytes:
    """A whole functionCall with its signature, then the finish in a later ``{"text": ""}``
    chunk (the shape of ``function_call_thought_signature_gemini3.sse``).
    """
    return sse(
        chunk({"functionCall": {"name": name, "args": args}, "thoughtSignature": signature(turn)}),
        chunk(
            {"text": ""},
            finish="STOP",
            usage={"promptTokenCount": 60, "candidatesTokenCount": 12, "totalTokenCount": 72},
        ),
    )


def malformed_reply(message: str) -> bytes:
    """``MALFORMED_FUNCTION_CALL`` with no content (``malformed_function_call.derived.sse``)."""
    return sse(
        {
            "candidates": [
                {"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": message, "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": 40, "totalTokenCount": 40},
        }
    )


def text_reply(text: str) -> bytes:
    """A plain text answer in two chunks."""
    half = len(text) // 2
    return sse(chunk({"text": text[:half]}), chunk({"text": text[half:]}, finish="STOP"))
