"""A real LiteLLM proxy as the tests run it: its own virtualenv, a free loopback port.

LiteLLM pins versions the main virtualenv cannot hold (``.ci/constraints.txt``), so it lives in
a virtualenv of its own, with toolwire installed there too (LiteLLM loads the guardrail in its
own process): ``.venv-litellm`` next to the repository, made by ``.ci/run``, or the one
``TOOLWIRE_LITELLM_VENV`` names. :func:`litellm_or_skip` skips a test when it is absent on a
development machine, and fails it instead when ``TOOLWIRE_REQUIRE_LITELLM=1`` (``.ci/run`` sets
it: in CI the guardrail is always tested).

:func:`running_litellm` writes a ``config.yaml`` with one model, ``openai/<name>`` at a fake
upstream, and (``guardrail=True``) toolwire's guardrail, starts ``litellm --config ... --port N``
on ``127.0.0.1``, waits for its liveness route and stops it (SIGTERM, then SIGKILL) on the way
out. Nothing reaches the internet: the model cost map is LiteLLM's local copy, telemetry off.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from serve.proxy import Proxy

ROOT = Path(__file__).resolve().parents[2]
MODEL = "fake"
#: The proxy's master key (LiteLLM refuses to start without one); the clients send it.
MASTER_KEY = "sk-toolwire-test-master"

#: LiteLLM's settings that keep it on loopback and quiet: its model cost map from the copy it
#: ships (not fetched from GitHub), no telemetry, no update check.
OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "LITELLM_DONT_SHOW_FEEDBACK_BOX": "True",
    "HF_HUB_OFFLINE": "1",
    "DISABLE_SCHEMA_UPDATE": "True",
    "LITELLM_LOG": "ERROR",
}


def litellm_venv() -> Path:
    """Where LiteLLM's virtualenv is (``TOOLWIRE_LITELLM_VENV``, else ``.venv-litellm``)."""
    named = os.environ.get("TOOLWIRE_LITELLM_VENV")
    return Path(named) if named else ROOT / ".venv-litellm"


def litellm_or_skip() -> Path:
    """The ``litellm`` command of LiteLLM's virtualenv; skip (or, in CI, fail) without it."""
    command = litellm_venv() / "bin" / "litellm"
    if command.exists():
        return command
    reason = (
        f"LiteLLM's virtualenv is not at {command.parent.parent} (make it as .ci/run does: "
        "python3 -m venv .venv-litellm && .venv-litellm/bin/pip install -e . "
        "'litellm[proxy]==1.108.7', or set TOOLWIRE_LITELLM_VENV)"
    )
    if os.environ.get("TOOLWIRE_REQUIRE_LITELLM") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def config_yaml(api_base: str, *, guardrail: bool, options: str = "") -> str:
    """LiteLLM's ``config.yaml``: one model at ``api_base``, and maybe toolwire's guardrail."""
    text = f"""model_list:
  - model_name: {MODEL}
    litellm_params:
      model: openai/scripted-model
      api_base: {api_base}
      api_key: sk-fake
litellm_settings:
  telemetry: false
  num_retries: 0
  request_timeout: 30
general_settings:
  master_key: {MASTER_KEY}
  disable_spend_logs: true
"""
    if guardrail:
        text += f"""guardrails:
  - guardrail_name: toolwire
    litellm_params:
      guardrail: toolwire.gateway.litellm.ToolwireGuardrail
      mode: [pre_call, post_call]
      default_on: true
{options}"""
    return text


#: A running LiteLLM proxy is held as a running ``toolwire serve`` is: its base URL
#: (``.../v1``), its process, its output (``tests/serve/proxy.py``).
LiteLLM = Proxy


def _pump(process: subprocess.Popen[bytes], lines: list[str]) -> None:
    assert process.stdout is not None
    for raw in process.stdout:
        lines.append(raw.decode("utf-8", "replace"))


@contextmanager
def running_litellm(
    config: str, directory: Path, *, startup: float = 120.0, env: dict[str, str] | None = None
) -> Iterator[LiteLLM]:
    """Start ``litellm --config <directory>/config.yaml`` on a free port; stop it afterwards."""
    command = litellm_or_skip()
    path = directory / "config.yaml"
    path.write_text(config)
    port = free_port()
    environment = {**os.environ, **OFFLINE_ENV, "PYTHONUNBUFFERED": "1", **(env or {})}
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "DATABASE_URL", "LITELLM_MASTER_KEY"):
        environment.pop(name, None)
    process = subprocess.Popen(
        [str(command), "--config", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=environment,
        cwd=directory,
    )
    proxy = LiteLLM(f"http://127.0.0.1:{port}/v1", process)
    threading.Thread(target=_pump, args=(process, proxy.lines), daemon=True).start()
    try:
        _wait_live(proxy, port, startup)
        yield proxy
    finally:
        try:
            proxy.stop(timeout=20.0)
        finally:
            assert process.stdout is not None
            process.stdout.close()


def _wait_live(proxy: LiteLLM, port: int, startup: float) -> None:
    deadline = time.monotonic() + startup
    url = f"http://127.0.0.1:{port}/health/liveliness"
    while True:
        if proxy.process.poll() is not None:
            raise AssertionError(f"LiteLLM exited ({proxy.process.returncode}):\n{proxy.log}")
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"LiteLLM did not start in {startup} s:\n{proxy.log}")
        time.sleep(0.25)
