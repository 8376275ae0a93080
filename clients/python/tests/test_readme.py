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


CLIENT_README = ROOT / "clients" / "python" / "README.md"


def test_the_client_readme_points_to_what_exists() -> None:
    """Its links are file paths that exist (an anchor breaks silently when a heading is renamed), and a
    section of the top README it names by title is one the top README has."""
    readme = CLIENT_README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)]+)\)", readme)
    assert links, "the client's README links to the full guide"
    for link in links:
        assert "#" not in link, link
        assert (CLIENT_README.parent / link).exists(), link
    top = (ROOT / "README.md").read_text(encoding="utf-8")
    for section in re.findall(r'under "([^"]+)"', readme) + re.findall(r'the "([^"]+)" section', readme):
        assert f"\n## {section}\n" in top, f'the top README has no section "{section}"'


def test_the_client_readmes_first_call_runs_with_shelf_api_url(live: LiveServer, tmp_path: Path) -> None:
    readme = CLIENT_README.read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", readme, re.S)
    assert match and "SHELF_API_URL=" in readme
    script = tmp_path / "list_catalogue.py"
    script.write_text(match.group(1), encoding="utf-8")
    env = {"SHELF_API_KEY": live.keys["main"], "SHELF_API_URL": live.origin, "PATH": ""}
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == ["1 Item 01", "2 Item 02"]
