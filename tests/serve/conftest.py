"""The proxy tests' shared upstream and proxy, under the names the modules use.

``chat_upstream`` and ``chat_proxy`` (tests/conftest.py) run once per test process; a module
that needs other settings defines its own ``upstream`` and ``proxy``, which take precedence.
"""

from __future__ import annotations

import pytest
from heal.upstream import HealUpstream

from .proxy import Proxy


@pytest.fixture
def upstream(chat_upstream: HealUpstream) -> HealUpstream:
    """The shared scripted upstream, emptied: no script left, nothing received yet."""
    chat_upstream.reset()
    return chat_upstream


@pytest.fixture
def proxy(chat_proxy: Proxy) -> Proxy:
    """``toolwire serve --provider llama-cpp`` in front of :func:`upstream`."""
    return chat_proxy
