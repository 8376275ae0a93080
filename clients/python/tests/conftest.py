"""A real ``shelfapi serve`` for the tests: a temporary SQLite store filled through the CLI (``shelfapi load
--json``, the way operators make accounts and keys), plan limits small where a test must reach one, and
httpx event hooks that record every attempt the client makes (retries included). No HTTP is mocked."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from shelfapi import Client

ROOT = Path(__file__).resolve().parents[3]

#: Catalogue ids 1..40; 5 is a draft and 12 archived, so not served.
UNPUBLISHED = {5, 12}
PUBLISHED_IDS = [i for i in range(1, 41) if i not in UNPUBLISHED]
#: Published items with a price record: all but 7 and 20.
PRICED_IDS = [i for i in PUBLISHED_IDS if i not in (7, 20)]
#: A name the CSV must quote: comma, doubled quotes and a line break.
TRICKY_NAME = 'Pokémon, "Gold" Edition\nLimited'


def item_name(i: int) -> str:
    if i == 3:
        return TRICKY_NAME
    if i == 9:
        return "Dr. Mário"  # the search ignores accents: "mario" finds it
    if i % 3 == 0:
        return f"Super Mario Land {i}"
    return f"Item {i:02d}"


def platform_of(i: int) -> str:
    return "NES" if i % 2 == 0 else "Nintendo 64"


#: What a search for "mario" must find, computed from the data rather than asked of the server.
MARIO_IDS = [i for i in PUBLISHED_IDS if "mario" in item_name(i).lower().replace("á", "a")]

#: Plan limits: `enthusiast` (the main account) has room for every test; `addon` allows 2 requests a
#: minute (the burst accounts reach it with two /me, which never count against the quota) and 1 a month
#: (the quota account's second request is quota_exceeded).
PLAN_LIMITS = {"enthusiast": {"monthly": 1_000_000, "perMinute": 1_000_000}, "addon": {"monthly": 1, "perMinute": 2}}
SCOPES = ["catalogue:read", "prices:read", "export", "collection:read", "marketplace:read", "transactions:read"]
STAMP = "2026-11-01T00:00:00.000Z"


def dataset() -> dict[str, Any]:
    return {
        "accounts": [
            {"ref": "main", "email": "main@example.com", "plan": "enthusiast"},
            {"ref": "other", "email": "other@example.com", "plan": "enthusiast"},
            {"ref": "lapsed", "email": "lapsed@example.com", "plan": "addon", "planStatus": "lapsed"},
            {"ref": "quota", "email": "quota@example.com", "plan": "addon"},
            {"ref": "quota-async", "email": "quota-async@example.com", "plan": "addon"},
            {"ref": "burst", "email": "burst@example.com", "plan": "addon"},
            {"ref": "burst-async", "email": "burst-async@example.com", "plan": "addon"},
        ],
        "keys": [
            {"ref": "main", "account": "main", "name": "all scopes", "scopes": SCOPES},
            {"ref": "catalogue-only", "account": "main", "name": "catalogue only", "scopes": ["catalogue:read"]},
            {"ref": "lapsed", "account": "lapsed", "name": "all scopes", "scopes": SCOPES},
            {"ref": "quota", "account": "quota", "name": "all scopes", "scopes": SCOPES},
            {"ref": "quota-async", "account": "quota-async", "name": "all scopes", "scopes": SCOPES},
            {"ref": "burst", "account": "burst", "name": "all scopes", "scopes": SCOPES},
            {"ref": "burst-async", "account": "burst-async", "name": "all scopes", "scopes": SCOPES},
        ],
        "catalogue": [
            {
                "masterItemId": i,
                "name": item_name(i),
                "slug": f"item-{i}",
                "category": "console" if i % 5 == 0 else "game",
                "platform": platform_of(i),
                "status": "DRAFT" if i == 5 else "ARCHIVED" if i == 12 else "PUBLISHED",
                "releaseYear": None if i % 4 == 0 else 1980 + i,
            }
            for i in range(1, 41)
        ],
        "prices": [
            {
                "masterItemId": i,
                "upc": str(100000000000 + i),
                "loose": i + 0.5,
                "cib": None if i % 2 == 0 else i * 2,
                "new": i * 10.25,
                "scrapeDate": STAMP,
            }
            for i in [*PRICED_IDS, 5]
        ],
        "collection": [
            {
                "id": n + 1,
                "account": "main",
                "masterItemId": i,
                "condition": "CIB",
                "status": "OWNED",
                "purchasePrice": 10,
                "acquiredAt": STAMP,
                "location": "shelf",
                "isFavorite": n == 0,
            }
            for n, i in enumerate([1, 2, 3, 4, 6])
        ],
        "listings": [
            {"id": n, "account": "main", "masterItemId": n, "title": f"Listing {n}", "condition": "LOOSE",
             "status": "ACTIVE", "price": 20 + n, "currency": "USD", "acceptsTrade": False, "shippingCost": 4.5}
            for n in (1, 2, 3)
        ] + [
            {"id": 4, "account": "other", "masterItemId": 4, "title": "Someone else's", "condition": "NEW",
             "status": "ACTIVE", "price": 99, "currency": "USD", "acceptsTrade": True, "shippingCost": 0},
        ],  # fmt: skip
        "offers": [
            {"id": 1, "account": "main", "listingId": 4, "amount": 18, "message": "would you take 18?", "status": "PENDING"},
        ],
        "transactions": [
            {"id": 1, "buyer": "other", "seller": "main", "listingId": 2, "amount": 22, "platformFee": 2.2,
             "status": "SHIPPED", "trackingNumber": "1Z999", "shippingCarrier": "UPS", "estimatedDelivery": STAMP},
        ],  # fmt: skip
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cli_env(extra: dict[str, str]) -> dict[str, str]:
    """Of the test runner's environment only PATH and HOME go on, so no setting of a developer's shell leaks in."""
    return {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", ""), "LOG_LEVEL": "warn", **extra}


def cli(args: list[str]) -> list[str]:
    # The built CLI, as users run it: `npm run test:python` compiles dist/ first.
    return ["node", "bin/shelfapi.js", *args]


@dataclass
class LiveServer:
    origin: str
    keys: dict[str, str]
    process: subprocess.Popen[bytes]
    directory: str
    #: When the burst accounts' windows were filled (time.monotonic()): a slot frees 60 s later.
    filled_at: float = 0.0

    def client(self, key: str = "main", **options: Any) -> Client:
        return Client(self.keys[key], self.origin, **options)


@pytest.fixture(scope="session")
def live() -> Iterator[LiveServer]:
    directory = tempfile.mkdtemp(prefix="shelfapi-python-")
    env = cli_env({"DATABASE_URL": os.path.join(directory, "store.sqlite"), "PLAN_LIMITS": json.dumps(PLAN_LIMITS)})
    data = os.path.join(directory, "dataset.json")
    with open(data, "w", encoding="utf-8") as file:
        json.dump(dataset(), file)
    loaded = subprocess.run(cli(["load", data, "--json"]), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr
    keys: dict[str, str] = json.loads(loaded.stdout)["keys"]

    port, ops_port = free_port(), free_port()
    log = open(os.path.join(directory, "server.log"), "wb")
    process = subprocess.Popen(
        cli(["serve"]), cwd=ROOT, env={**env, "PORT": str(port), "OPS_PORT": str(ops_port)}, stdout=log, stderr=log
    )
    server = LiveServer(origin=f"http://127.0.0.1:{port}", keys=keys, process=process, directory=directory)
    try:
        # Generous: a start compiles the source with tsx, which takes tens of seconds on a loaded machine.
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, Path(directory, "server.log").read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{ops_port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not start in 180 s"
            time.sleep(0.2)
        # Fill the burst accounts' windows now, at the start of the session: the 429 tests run last, so the
        # Retry-After they wait for is what is left of these 60 seconds.
        server.filled_at = time.monotonic()
        for account in ("burst", "burst-async"):
            with server.client(account, max_retries=0) as shelf:
                shelf.me()
                shelf.me()
        yield server
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        logged = Path(directory, "server.log").read_text(encoding="utf-8", errors="replace")
        shutil.rmtree(directory, ignore_errors=True)
    # Whatever the client sent, no key reached the server's log.
    leaked = [ref for ref, key in keys.items() if key in logged]
    assert leaked == [], f"keys {leaked} in the server's log"


@pytest.fixture(scope="session")
def shelf(live: LiveServer) -> Iterator[Client]:
    with live.client() as client:
        yield client


@dataclass
class Attempt:
    url: str
    status: int
    request_id: str | None


@dataclass
class Recorder:
    """Every answer an httpx client received, in order: pass ``hooks`` as its ``event_hooks``."""

    attempts: list[Attempt] = field(default_factory=list)

    def record(self, response: httpx.Response) -> None:
        self.attempts.append(Attempt(str(response.request.url), response.status_code, response.headers.get("x-request-id")))

    async def arecord(self, response: httpx.Response) -> None:
        self.record(response)

    @property
    def statuses(self) -> list[int]:
        return [a.status for a in self.attempts]

    def http(self) -> httpx.Client:
        return httpx.Client(event_hooks={"response": [self.record]})

    def async_http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(event_hooks={"response": [self.arecord]})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``last`` run after every other: they wait for the burst windows filled at the start."""
    items.sort(key=lambda item: item.get_closest_marker("last") is not None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "last: run after every other test (it waits out a burst window)")
