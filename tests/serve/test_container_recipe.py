"""The container recipe starts the command it documents: its entrypoint and default arguments
are ones ``toolwire serve`` accepts (checked with the real settings, without binding a port)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from toolwire.serve import load_settings

RECIPE = Path(__file__).resolve().parents[2] / "docs" / "container" / "Containerfile"


def _json_instruction(name: str) -> list[str]:
    found = re.search(rf"^{name} (\[.*\])$", RECIPE.read_text(), re.MULTILINE)
    assert found, f"no {name} in {RECIPE}"
    value: list[str] = json.loads(found.group(1))
    return value


def test_the_entrypoint_and_its_default_arguments_make_valid_settings() -> None:
    command = _json_instruction("ENTRYPOINT") + _json_instruction("CMD")
    assert command[:2] == ["toolwire", "serve"]
    flags = dict(zip(command[2::2], command[3::2], strict=True))
    settings = load_settings(
        None,
        host=flags["--host"],
        port=int(flags["--port"]),
        upstream=flags["--upstream"],
    )
    assert (settings.host, settings.port) == ("0.0.0.0", 8000)
    assert settings.heal


def test_the_recipe_installs_the_serve_extra_and_never_runs_as_root() -> None:
    text = RECIPE.read_text()
    assert "[serve]" in text
    user = re.search(r"^USER (\S+)", text, re.MULTILINE)
    assert user
    assert not user.group(1).startswith(("0", "root"))
    assert "/healthz" in text
