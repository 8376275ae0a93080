"""AsyncClient: the same methods as Client, with the same parameters, answering the same things."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from shelfapi import AsyncClient, Client, InsufficientScopeError, NotFoundError, QuotaExceededError

from .conftest import MARIO_IDS, PRICED_IDS, LiveServer, Recorder


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and name not in ("close", "aclose")
    }


def test_the_same_methods_with_the_same_parameters() -> None:
    sync, asynchronous = public_methods(Client), public_methods(AsyncClient)
    assert sorted(sync) == sorted(asynchronous)
    for name, signature in sync.items():
        assert list(signature.parameters) == list(asynchronous[name].parameters), name
    for name in sync:
        method = getattr(AsyncClient, name)
        if name.startswith(("iter_", "export_prices")) and name != "export_prices_to":
            assert inspect.isasyncgenfunction(method) or not inspect.iscoroutinefunction(method), name
        else:
            assert inspect.iscoroutinefunction(method), name


@pytest.mark.asyncio
async def test_async_answers_equal_the_blocking_ones(live: LiveServer, shelf: Client, tmp_path: Path) -> None:
    recorder = Recorder()
    async with recorder.async_http() as http, AsyncClient(live.keys["main"], live.origin, http_client=http) as client:
        assert (await client.me())["plan"] == "enthusiast"
        assert await client.catalogue(search="mario", limit=2) == shelf.catalogue(search="mario", limit=2)
        assert await client.catalogue_item(3) == shelf.catalogue_item(3)
        assert await client.price(3) == shelf.price(3)
        assert await client.prices(limit=3) == shelf.prices(limit=3)
        assert await client.collection() == shelf.collection()
        assert await client.collection_item(2) == shelf.collection_item(2)
        assert await client.collection_value() == shelf.collection_value()
        assert await client.listings() == shelf.listings()
        assert await client.offers() == shelf.offers()
        assert await client.transactions() == shelf.transactions()

        total = (await client.catalogue(search="mario", limit=1))["pagination"]["total"]
        items = [item async for item in client.iter_catalogue(search="mario", limit=4)]
        assert [i["masterItemId"] for i in items] == MARIO_IDS and len(items) == total
        assert [r["masterItemId"] async for r in client.iter_prices(limit=9)] == PRICED_IDS
        assert [r["id"] async for r in client.iter_collection(limit=2)] == [1, 2, 3, 4, 5]
        assert [r["id"] async for r in client.iter_listings()] == [1, 2, 3]
        assert [r["id"] async for r in client.iter_offers()] == [1]
        assert [r["id"] async for r in client.iter_transactions()] == [1]

        rows = [row async for row in client.export_prices(platform="NES")]
        assert rows == list(shelf.export_prices(platform="NES"))
        size = await client.export_prices_to(tmp_path / "async.csv", platform="NES")
        shelf.export_prices_to(tmp_path / "sync.csv", platform="NES")
        assert (tmp_path / "async.csv").read_bytes() == (tmp_path / "sync.csv").read_bytes()
        assert size == (tmp_path / "async.csv").stat().st_size
        assert client.rate_limit is not None and client.rate_limit.limit == 1_000_000

        with pytest.raises(NotFoundError) as missing:
            await client.catalogue_item(9999)
        assert missing.value.request_id == recorder.attempts[-1].request_id == client.last_request_id

    async with AsyncClient(live.keys["catalogue-only"], live.origin) as limited:
        with pytest.raises(InsufficientScopeError) as refused:
            await limited.prices()
        assert (refused.value.status, refused.value.code) == (403, "insufficient_scope")
        assert refused.value.request_id
        with pytest.raises(InsufficientScopeError):
            [row async for row in limited.export_prices()]


@pytest.mark.asyncio
async def test_async_quota_exceeded_is_raised_at_once(live: LiveServer) -> None:
    recorder = Recorder()
    async with recorder.async_http() as http, AsyncClient(live.keys["quota-async"], live.origin, http_client=http, max_retries=5) as client:
        await client.catalogue_item(1)  # the month's one request
        with pytest.raises(QuotaExceededError) as raised:
            await client.catalogue_item(2)
    assert recorder.statuses == [200, 429], "one request, no retry"
    assert raised.value.request_id == recorder.attempts[-1].request_id
