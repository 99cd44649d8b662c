"""The examples of ``docs/custom-stage.md`` run and pass the conformance kit they recommend."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from toolwire.testing import check_stage

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.anyio


def python_blocks(page: str) -> list[str]:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)\n```", text, flags=re.S)


async def _scrub(text: str) -> str:
    return text.replace("secret", "***")


async def test_the_custom_stage_examples_keep_the_contract(anyio_backend: str) -> None:
    sync_form, async_form, _test = python_blocks("custom-stage.md")
    names: dict[str, Any] = {"TOOLS": [], "scrub": _scrub}
    exec(sync_form, names)  # the page's code, as written
    names["msgspec"] = __import__("msgspec")
    names["toolwire"] = __import__("toolwire")
    exec(async_form, names)
    await check_stage(names["RENAME"])
    await check_stage(names["redact_text"])
