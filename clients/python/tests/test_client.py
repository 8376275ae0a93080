"""The blocking client against a live server: typed answers, every page, the export, errors, limits."""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path

import httpx
import pytest

from shelfapi import (
    PRICE_CSV_COLUMNS,
    BadRequestError,
    CatalogueItem,
    Client,
    ForbiddenError,
    InsufficientScopeError,
    NotFoundError,
    QuotaExceededError,
    RetryEvent,
    ShelfApiError,
    UnauthorizedError,
)

from .conftest import MARIO_IDS, PRICED_IDS, PUBLISHED_IDS, TRICKY_NAME, LiveServer, Recorder, platform_of


def test_one_method_per_endpoint_with_typed_answers(live: LiveServer, shelf: Client) -> None:
    me = shelf.me()
    assert me["plan"] == "enthusiast"
    assert me["usage"]["remaining"] == me["limits"]["monthly"] - me["usage"]["used"]

    page = shelf.catalogue(limit=10)
    assert [item["masterItemId"] for item in page["data"]] == PUBLISHED_IDS[:10]
    assert page["pagination"] == {"total": len(PUBLISHED_IDS), "limit": 10, "offset": 0, "hasMore": True}
    third: CatalogueItem = shelf.catalogue_item(3)
    assert third == next(item for item in page["data"] if item["masterItemId"] == 3)
    assert third["name"] == TRICKY_NAME
    assert shelf.catalogue_item(4)["releaseYear"] is None
    assert [i["masterItemId"] for i in shelf.catalogue(platform="nes", category="game", limit=3)["data"]] == [2, 4, 6]

    price = shelf.price(3)
    assert (price["loose"], price["cib"], price["new"]) == (3.5, 6, 30.75)
    assert shelf.price(4)["cib"] is None
    assert shelf.prices(upc="100000000004")["data"] == [shelf.price(4)]

    assert [row["id"] for row in shelf.collection(limit=2)["data"]] == [1, 2]
    assert shelf.collection_item(1)["isFavorite"] is True
    value = shelf.collection_value()
    assert value["ownedItems"] == 5
    assert [row["id"] for row in shelf.listings()["data"]] == [1, 2, 3]
    assert [row["amount"] for row in shelf.offers()["data"]] == [18]
    assert [(row["role"], row["status"]) for row in shelf.transactions()["data"]] == [("seller", "SHIPPED")]

    # A base URL given with the /developer/v1 prefix and a trailing slash reaches the same API.
    with Client(live.keys["main"], f"{live.origin}/developer/v1/") as prefixed:
        assert prefixed.base_url == shelf.base_url
        assert prefixed.catalogue_item(3) == third
    assert live.keys["main"] not in repr(shelf)


def test_iter_catalogue_yields_exactly_the_total_of_the_same_search(live: LiveServer) -> None:
    recorder = Recorder()
    with recorder.http() as http, live.client(http_client=http) as shelf:
        total = shelf.catalogue(search="mario", limit=1)["pagination"]["total"]
        recorder.attempts.clear()
        items = list(shelf.iter_catalogue(search="mario", limit=3))
    assert len(items) == total == len(MARIO_IDS)
    assert [item["masterItemId"] for item in items] == MARIO_IDS
    assert len(recorder.attempts) == math.ceil(total / 3), "one request a page"
    offsets = [httpx.URL(a.url).params["offset"] for a in recorder.attempts]
    assert offsets == [str(n) for n in range(0, total, 3)]
    assert all(httpx.URL(a.url).params["search"] == "mario" for a in recorder.attempts), "filters on every page"


def test_the_other_iterators_walk_every_page(shelf: Client) -> None:
    assert [r["masterItemId"] for r in shelf.iter_prices(limit=7)] == PRICED_IDS
    assert [r["masterItemId"] for r in shelf.iter_prices(offset=20, limit=2)] == PRICED_IDS[20:]
    assert [i["masterItemId"] for i in shelf.iter_catalogue(platform="NES")] == [i for i in PUBLISHED_IDS if i % 2 == 0]
    assert [r["id"] for r in shelf.iter_collection(limit=2)] == [1, 2, 3, 4, 5]
    assert [r["id"] for r in shelf.iter_listings(limit=1)] == [1, 2, 3]
    assert [r["id"] for r in shelf.iter_offers()] == [1]
    assert [r["id"] for r in shelf.iter_transactions()] == [1]
    assert list(shelf.iter_catalogue(search="no such thing")) == []


def raw_export(live: LiveServer, **params: str) -> bytes:
    """The export as the server sends it, asked for without the client."""
    response = httpx.get(
        f"{live.origin}/developer/v1/prices/export.csv", params=params, headers={"authorization": f"Bearer {live.keys['main']}"}
    )
    assert response.status_code == 200
    return response.content


def test_export_prices_yields_as_many_rows_as_the_csv_has(live: LiveServer, shelf: Client, tmp_path: Path) -> None:
    target = tmp_path / "nes.csv"
    size = shelf.export_prices_to(target, platform="NES")
    records = list(csv.reader(io.StringIO(target.read_text(encoding="utf-8"), newline="")))
    assert size == target.stat().st_size
    assert records[0] == list(PRICE_CSV_COLUMNS)

    rows = list(shelf.export_prices(platform="NES"))
    assert len(rows) == len(records) - 1
    assert [r["masterItemId"] for r in rows] == [i for i in PRICED_IDS if platform_of(i) == "NES"]
    # Typed as /prices answers them: field for field the same rows, numbers as numbers, empty as None.
    assert rows == list(shelf.iter_prices(platform="NES"))
    assert rows[0]["cib"] is None and isinstance(rows[0]["loose"], float)

    everything = list(shelf.export_prices())
    assert everything == list(shelf.iter_prices(limit=100))
    assert next(r for r in everything if r["masterItemId"] == 3)["name"] == TRICKY_NAME


def test_export_prices_to_writes_the_bytes_as_sent(live: LiveServer, shelf: Client, tmp_path: Path) -> None:
    target = tmp_path / "prices.csv"
    shelf.export_prices_to(target)
    assert target.read_bytes() == raw_export(live)
    assert b"\r\n" in target.read_bytes() and TRICKY_NAME.encode() in target.read_bytes().replace(b'""', b'"')
    shelf.export_prices_to(str(target), search="mario")
    assert target.read_bytes() == raw_export(live, search="mario")
    assert os.listdir(tmp_path) == ["prices.csv"], "no .part file left behind"

    # A refused export leaves no file, not even an empty one.
    with live.client("catalogue-only") as limited, pytest.raises(InsufficientScopeError):
        limited.export_prices_to(tmp_path / "refused.csv")
    assert os.listdir(tmp_path) == ["prices.csv"]


def test_stopping_an_export_early_closes_it(shelf: Client) -> None:
    rows = shelf.export_prices()
    assert next(rows)["masterItemId"] == PRICED_IDS[0]
    rows.close()
    # The connection went back to the pool: the client still answers.
    assert shelf.me()["plan"] == "enthusiast"


@pytest.mark.parametrize(
    ("what", "key", "call", "status", "code", "cls"),
    [
        ("missing item", "main", lambda c: c.catalogue_item(9999), 404, "not_found", NotFoundError),
        ("unpublished item", "main", lambda c: c.catalogue_item(5), 404, "not_found", NotFoundError),
        ("limit out of range", "main", lambda c: c.catalogue(limit=101), 400, "bad_request", BadRequestError),
        ("unknown key", None, lambda c: c.catalogue(), 401, "unauthorized", UnauthorizedError),
        ("lapsed plan", "lapsed", lambda c: c.catalogue(), 403, "forbidden", ForbiddenError),
        ("missing scope", "catalogue-only", lambda c: c.prices(), 403, "insufficient_scope", InsufficientScopeError),
        ("missing scope, iterator", "catalogue-only", lambda c: list(c.iter_prices()), 403, "insufficient_scope", InsufficientScopeError),
        ("missing scope, export", "catalogue-only", lambda c: list(c.export_prices()), 403, "insufficient_scope", InsufficientScopeError),
    ],
)
def test_every_error_carries_status_code_message_and_request_id_and_is_not_retried(
    live: LiveServer, what: str, key: str | None, call: object, status: int, code: str, cls: type[ShelfApiError]
) -> None:
    recorder = Recorder()
    api_key = live.keys[key] if key else "shelf_live_notakey"
    with recorder.http() as http, Client(api_key, live.origin, http_client=http, max_retries=5) as client:
        with pytest.raises(ShelfApiError) as raised:
            call(client)  # type: ignore[operator]
    error = raised.value
    assert type(error) is cls, what
    assert (error.status, error.code) == (status, code), what
    assert error.message and error.message != code, "the server's message"
    assert recorder.statuses == [status], "not retried"
    assert error.request_id and error.request_id == recorder.attempts[0].request_id == client.last_request_id
    assert api_key not in str(error) and api_key not in error.url


def test_quota_exceeded_is_raised_at_once_never_retried(live: LiveServer) -> None:
    recorder = Recorder()
    retries: list[RetryEvent] = []
    with recorder.http() as http, live.client("quota", http_client=http, max_retries=5, on_retry=retries.append) as client:
        client.catalogue_item(1)  # the month's one request
        assert client.rate_limit is not None and (client.rate_limit.limit, client.rate_limit.remaining) == (1, 0)
        with pytest.raises(QuotaExceededError) as raised:
            client.catalogue_item(2)
    error = raised.value
    assert (error.status, error.code) == (429, "quota_exceeded")
    assert recorder.statuses == [200, 429], "one request, no retry"
    assert retries == []
    assert error.request_id == recorder.attempts[-1].request_id
    # Retry-After points at the start of next month: the caller decides what to do with that.
    assert error.retry_after is not None and error.retry_after >= 1
    assert client.rate_limit is not None and client.rate_limit.remaining == 0


def test_the_last_answers_rate_limit_headers_are_readable(shelf: Client) -> None:
    shelf.catalogue(limit=1)
    first = shelf.rate_limit
    shelf.catalogue(limit=1)
    second = shelf.rate_limit
    assert first is not None and second is not None
    assert first.limit == second.limit == 1_000_000
    assert first.remaining is not None and second.remaining == first.remaining - 1
    assert second.reset is not None and second.reset > 0
    assert second.policy is not None and '"burst";q=1000000;w=60' in second.policy
    assert second.state is not None and second.state.startswith('"burst";r=')


def test_bad_options_are_refused_before_any_request() -> None:
    with pytest.raises(ValueError, match="api_key"):
        Client("")
    with pytest.raises(ValueError, match="max_retries"):
        Client("shelf_live_x", max_retries=-1)
