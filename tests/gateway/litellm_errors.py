"""Run by LiteLLM's virtualenv's Python: what LiteLLM's router raises when a request fails.

``test_litellm_guardrail.py`` runs this file as a script in LiteLLM's own process (LiteLLM is not
in the main virtualenv). It serves loopback upstreams that fail each way a retry of the guardrail
can fail (the connection refused, a hang-up with no answer, a body that breaks off, a stall past
the timeout, an HTTP 500, an HTTP 504; and answers it had no status to say were wrong: a
stream whose first event is the server's in-band error, a 200 whose body is not JSON or is
empty), asks LiteLLM's ``Router`` (``num_retries=0``, as the tests' ``config.yaml``) through
each, streamed and not (the in-band error streamed, the 200 bodies whole: the cases where
LiteLLM raises), and prints one JSON line: for each case,
the class names of the exception's chain (what it was raised while handling, outermost first),
its ``status_code``, and what toolwire's guardrail makes of it (``unanswered``, then the fault's
kind; ``None``: the upstream's answer; and ``answered_status``).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import litellm

from toolwire.gateway.litellm import answered_status, unanswered
from toolwire.heal.faults import exception_fault

#: Seconds the router waits for an answer (the stall waits longer).
TIMEOUT = 0.5


class _Failing(BaseHTTPRequestHandler):
    """Fails every request the way its path's first segment says."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        how = self.path.strip("/").split("/")[0]
        if how == "hangup":
            self.close_connection = True
        elif how == "broken":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"id": "chatcmpl-1",')
            self.close_connection = True
        elif how in ("inband", "garbage", "empty"):
            body = {
                # llama-server's words for a history it refuses, in band once streaming.
                "inband": b'data: {"error": {"code": 500, "message": "Failed to parse tool call '
                b'arguments as JSON: x", "type": "server_error"}}\n\n',
                "garbage": b"this is not json",
                "empty": b"",
            }[how]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif how == "stall":
            time.sleep(TIMEOUT * 4)
            self.close_connection = True
        else:
            body = json.dumps({"error": {"message": f"scripted {how}", "type": "server"}})
            self.send_response(int(how))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())


def _chain(error: BaseException) -> list[str]:
    names: list[str] = []
    link: BaseException | None = error
    while link is not None and len(names) < 16:
        names.append(type(link).__name__)
        link = link.__cause__ or link.__context__
    return names


async def _raised(api_base: str, stream: bool) -> BaseException:
    deployment = {"model": "openai/scripted", "api_base": api_base, "api_key": "sk-fake"}
    router = litellm.Router(
        model_list=[{"model_name": "fake", "litellm_params": {**deployment, "timeout": TIMEOUT}}],
        num_retries=0,
    )
    try:
        await router.acompletion(
            model="fake", messages=[{"role": "user", "content": "hi"}], stream=stream
        )
    except Exception as error:
        return error
    raise AssertionError(f"{api_base} answered")


async def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    bases = {"refused": f"http://127.0.0.1:{closed}/v1"}
    for how in ("hangup", "broken", "stall", "500", "504", "inband", "garbage", "empty"):
        bases[how] = f"http://127.0.0.1:{port}/{how}/v1"
    #: Where LiteLLM raises: a 200 body it cannot use only whole; the in-band error only
    #: streamed (whole, it is a body that is not JSON).
    streams = {"inband": (True,), "garbage": (False,), "empty": (False,)}
    seen: dict[str, dict[str, Any]] = {}
    for how, base in bases.items():
        for stream in streams.get(how, (False, True)):
            error = await _raised(base, stream)
            fault = unanswered(error)
            seen[f"{how}{' streamed' if stream else ''}"] = {
                "chain": _chain(error),
                "status": getattr(error, "status_code", None),
                "fault": None if fault is None else exception_fault(fault).kind,
                "answered": answered_status(error),
            }
    server.shutdown()
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main())
