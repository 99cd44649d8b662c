"""Stream recordings shipped with toolwire, for ``toolwire replay bundled:NAME`` and examples.

- ``llama_cpp_write_cut_at_max_tokens``: llama-cpp-python serving SmolLM2-135M with
  ``max_tokens=24``; the ``write`` call stops after ``"content":`` yet the server says
  ``finish_reason: tool_calls`` (truncation visible only in the arguments).
- ``llama_cpp_write_complete``: the same request with ``max_tokens=300``: a complete call.
- ``openai_two_parallel_calls``: OpenAI gpt-4o, two parallel calls, usage chunk, ``[DONE]``.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["bundled_names", "bundled_provider", "read_bundled"]

#: The provider each shipped recording was made with (its profile matters: llama-cpp-python
#: hides its length finish).
_PROVIDERS = {
    "llama_cpp_write_cut_at_max_tokens": "llama-cpp",
    "llama_cpp_write_complete": "llama-cpp",
    "openai_two_parallel_calls": "openai-chat",
}


def bundled_names() -> list[str]:
    """The names of the shipped recordings."""
    folder = resources.files(__name__)
    return sorted(
        entry.name.rsplit(".", 1)[0]
        for entry in folder.iterdir()
        if entry.name.endswith((".sse", ".ndjson"))
    )


def read_bundled(name: str) -> bytes:
    """The bytes of one shipped recording; ``KeyError`` when there is none of that name."""
    folder = resources.files(__name__)
    for suffix in (".sse", ".ndjson"):
        entry = folder.joinpath(name + suffix)
        if entry.is_file():
            return entry.read_bytes()
    raise KeyError(name)


def bundled_provider(name: str) -> str:
    """The provider name a shipped recording is read as (``openai-chat`` when not listed)."""
    return _PROVIDERS.get(name, "openai-chat")
