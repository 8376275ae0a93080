"""examples/mirror_prices.py, run as a user runs it, against the live server."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

from shelfapi import Client

from .conftest import ROOT, LiveServer

EXAMPLE = ROOT / "examples" / "mirror_prices.py"


def run(live: LiveServer, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"SHELF_API_KEY": key, "SHELF_API_URL": live.origin, "PATH": ""}
    return subprocess.run([sys.executable, str(EXAMPLE), *args], env=env, capture_output=True, text=True, timeout=120)


def test_mirrors_every_price_into_sqlite_and_again_without_duplicates(live: LiveServer, shelf: Client, tmp_path: Path) -> None:
    db = tmp_path / "prices.sqlite"
    expected = [(r["masterItemId"], r["name"], r["loose"], r["cib"]) for r in shelf.iter_prices(limit=100)]
    for _ in range(2):
        result = run(live, live.keys["main"], "--db", str(db))
        assert result.returncode == 0, result.stderr
        assert result.stdout == f"mirrored {len(expected)} prices into {db}\n"
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT master_item_id, name, loose, cib FROM prices ORDER BY master_item_id").fetchall()
        runs = conn.execute("SELECT rows FROM mirror_runs").fetchall()
    conn.close()
    assert rows == expected
    assert runs == [(len(expected),), (len(expected),)]

    nes = run(live, live.keys["main"], "--db", str(db), "--platform", "nes")
    assert nes.returncode == 0, nes.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT DISTINCT platform FROM prices").fetchall() == [("NES",)]
    conn.close()


def test_an_error_keeps_the_last_mirror_and_says_why(live: LiveServer, tmp_path: Path) -> None:
    db = tmp_path / "prices.sqlite"
    assert run(live, live.keys["main"], "--db", str(db)).returncode == 0
    refused = run(live, live.keys["catalogue-only"], "--db", str(db))
    assert refused.returncode == 1
    assert "403 insufficient_scope" in refused.stderr and "request id" in refused.stderr
    assert live.keys["catalogue-only"] not in refused.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM prices").fetchone()[0] > 0
        assert conn.execute("SELECT count(*) FROM mirror_runs").fetchone()[0] == 1
    conn.close()
    assert run(live, "", "--db", str(db)).returncode == 2


def test_a_server_not_running_at_shelf_api_url_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        origin = f"http://127.0.0.1:{probe.getsockname()[1]}"
    env = {"SHELF_API_KEY": "shelf_live_" + "x" * 49, "SHELF_API_URL": origin, "PATH": ""}
    db = str(tmp_path / "prices.sqlite")
    result = subprocess.run([sys.executable, str(EXAMPLE), "--db", db], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    # The client's own error naming the address, not an httpx traceback.
    assert "Traceback" not in result.stderr and "httpx" not in result.stderr, result.stderr
    assert "no answer from the server" in result.stderr and f"is it running at {origin}/developer/v1?" in result.stderr
    assert "set SHELF_API_URL" in result.stderr
