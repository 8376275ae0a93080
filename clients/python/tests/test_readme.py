"""The README's first Python call, taken from the README itself, run as a script against the live server."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT, TRICKY_NAME, LiveServer


def first_call() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## The Python client") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the README's Python section has a first call"
    return match.group(1)


def test_the_first_call_lists_a_catalogue_page(live: LiveServer, tmp_path: Path) -> None:
    script = tmp_path / "list_catalogue.py"
    script.write_text(first_call(), encoding="utf-8")
    env = {"SHELF_API_KEY": live.keys["main"], "SHELF_API_URL": live.origin, "PATH": ""}
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        f"1\tItem 01\tNintendo 64\t1981\n2\tItem 02\tNES\t1982\n3\t{TRICKY_NAME}\tNintendo 64\t1983\n"
        "4\tItem 04\tNES\tyear unknown\n6\tSuper Mario Land 6\tNES\t1986\n38 published items in all\n"
    )
