"""The client against a misbehaving server or proxy (issue 40, items 6-9), served by tests/misbehaving.py:
an absurd Retry-After is raised at once rather than slept on; the key echoed back by a proxy appears in
no exception or retry event; ``timeout`` bounds the whole call however slowly the bytes arrive; no answer
at all is the client's own error, not httpx's traceback."""

from __future__ import annotations

import asyncio
import socket
import time
import traceback
from typing import Any, Iterator

import pytest

from shelfapi import (
    AsyncClient,
    Client,
    CsvSyntaxError,
    RateLimitedError,
    RetryEvent,
    ServiceUnavailableError,
    ShelfApiError,
    ShelfConnectionError,
    ShelfError,
    ShelfTimeoutError,
)
from shelfapi.errors import RETRY_AFTER_CEILING, parse_retry_after

from .misbehaving import KEY, SECRET, MisbehavingServer

#: Slack for a loaded machine (the tests share two cores with other work).
SLACK = 2.0


@pytest.fixture(scope="module")
def server() -> Iterator[MisbehavingServer]:
    misbehaving = MisbehavingServer()
    yield misbehaving
    misbehaving.close()


def at(server: MisbehavingServer, mode: str) -> str:
    return f"{server.origin}/{mode}"


# -- item 6: Retry-After ------------------------------------------------------------------------------------


def test_retry_after_parsing_never_raises() -> None:
    assert parse_retry_after("99999999") == 99_999_999
    assert parse_retry_after(" 0012 ") == 12
    assert parse_retry_after("9" * 5000) == RETRY_AFTER_CEILING  # int() refuses over 4,300 digits
    year_9999 = parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT")
    assert year_9999 is not None and 2 * 10**11 < year_9999 < RETRY_AFTER_CEILING
    assert parse_retry_after("Sat, 01 Jan 10000 00:00:00 GMT") is None
    assert parse_retry_after("Mon, 01 Jan 0001 00:00:00 -2359") == 0
    for nonsense in ("²", "-5", "1.5", "", "soon"):
        assert parse_retry_after(nonsense) is None


def test_a_retry_after_of_three_years_is_raised_at_once(server: MisbehavingServer) -> None:
    started = time.monotonic()
    with Client(KEY, at(server, "huge-retry-after")) as client, pytest.raises(ServiceUnavailableError) as raised:
        client.me()
    assert time.monotonic() - started < SLACK
    assert raised.value.retry_after == 99_999_999
    assert server.requests["huge-retry-after"] == 1


def test_a_retry_after_in_the_year_9999_is_raised_at_once_without_overflow(server: MisbehavingServer) -> None:
    started = time.monotonic()
    with Client(KEY, at(server, "date-retry-after")) as client, pytest.raises(RateLimitedError) as raised:
        client.me()
    assert time.monotonic() - started < SLACK
    assert raised.value.retry_after is not None and raised.value.retry_after > 2 * 10**11


@pytest.mark.asyncio
async def test_the_async_client_raises_them_at_once_too(server: MisbehavingServer) -> None:
    started = time.monotonic()
    async with AsyncClient(KEY, at(server, "date-retry-after")) as client:
        with pytest.raises(RateLimitedError):
            await client.me()
    async with AsyncClient(KEY, at(server, "huge-retry-after")) as client:
        with pytest.raises(ServiceUnavailableError) as raised:
            await client.me()
    assert raised.value.retry_after == 99_999_999
    assert time.monotonic() - started < SLACK


def test_max_retry_wait_sets_the_longest_wait(server: MisbehavingServer) -> None:
    before = server.requests["retry-after-2"]
    started = time.monotonic()
    with Client(KEY, at(server, "retry-after-2"), max_retry_wait=1) as client, pytest.raises(ServiceUnavailableError) as raised:
        client.me()
    assert (raised.value.retry_after, server.requests["retry-after-2"] - before) == (2, 1)
    assert time.monotonic() - started < SLACK
    with pytest.raises(ValueError):
        Client(KEY, max_retry_wait=float("inf"))


# -- item 8: timeout bounds the whole call ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["trickle-body", "trickle-headers"])
def test_timeout_bounds_a_call_to_a_server_trickling_a_byte_a_second(server: MisbehavingServer, mode: str) -> None:
    started = time.monotonic()
    with Client(KEY, at(server, mode), timeout=3) as client, pytest.raises(ShelfTimeoutError) as raised:
        client.me()
    elapsed = time.monotonic() - started
    assert 3 <= elapsed < 3 + SLACK, elapsed
    assert raised.value.timeout == 3 and "timeout=3 s" in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_timeout_bounds_the_export_too(server: MisbehavingServer) -> None:
    started = time.monotonic()
    with Client(KEY, at(server, "trickle-body"), timeout=2) as client, pytest.raises(ShelfTimeoutError):
        list(client.export_prices())
    assert time.monotonic() - started < 2 + SLACK


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["trickle-body", "trickle-headers"])
async def test_the_async_timeout_bounds_the_whole_call(server: MisbehavingServer, mode: str) -> None:
    started = time.monotonic()
    async with AsyncClient(KEY, at(server, mode), timeout=3) as client:
        with pytest.raises(ShelfTimeoutError):
            await client.me()
        elapsed = time.monotonic() - started
        with pytest.raises(ShelfTimeoutError):
            [row async for row in client.export_prices()]
    assert 3 <= elapsed < 3 + SLACK, elapsed


def test_timeout_counts_the_waits_between_retries(server: MisbehavingServer) -> None:
    # Retry-After: 2 each time; after the first wait only about 1 s is left, so the second is not waited.
    before = server.requests["retry-after-2"]
    started = time.monotonic()
    with Client(KEY, at(server, "retry-after-2"), timeout=3, max_retries=5) as client:
        with pytest.raises(ServiceUnavailableError):
            client.me()
    assert 2 <= time.monotonic() - started < 3
    assert server.requests["retry-after-2"] - before == 2


# -- item 7: the key is in no exception ---------------------------------------------------------------------


def assert_no_key(*things: Any) -> None:
    for thing in things:
        texts = [str(thing), repr(thing)]
        if isinstance(thing, BaseException):
            texts += ["".join(traceback.format_exception(thing)), *map(repr, vars(thing).values())]
        for text in texts:
            assert KEY not in text and SECRET not in text, text


def test_a_key_echoed_by_a_proxy_is_in_no_exception_or_retry_event(server: MisbehavingServer) -> None:
    events: list[RetryEvent] = []
    with Client(KEY, at(server, "echo"), max_retries=1, on_retry=events.append) as client:
        with pytest.raises(ShelfApiError) as raised:
            client.me()
        assert "refused Bearer [redacted API key]" in raised.value.message
        assert len(events) == 1
        assert_no_key(raised.value, events[0], client.last_request_id, client.rate_limit, client)
        for mode, expected in (("echo-html", ShelfApiError), ("echo-2xx", ShelfApiError), ("echo-csv", CsvSyntaxError)):
            with Client(KEY, at(server, mode)) as echoed, pytest.raises(expected) as other:
                list(echoed.export_prices()) if mode == "echo-csv" else echoed.me()
            assert_no_key(other.value, echoed.last_request_id)


@pytest.mark.asyncio
async def test_the_async_client_keeps_the_key_out_too(server: MisbehavingServer) -> None:
    events: list[RetryEvent] = []
    async with AsyncClient(KEY, at(server, "echo"), max_retries=1, on_retry=events.append) as client:
        with pytest.raises(ShelfApiError) as raised:
            await client.me()
        assert_no_key(raised.value, *events, client.last_request_id)
    async with AsyncClient(KEY, at(server, "echo-csv")) as client:
        with pytest.raises(CsvSyntaxError) as bad_csv:
            [row async for row in client.export_prices()]
        assert_no_key(bad_csv.value)


# -- item 9: no answer at all -------------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_refused_connection_is_the_clients_own_error() -> None:
    origin = f"http://127.0.0.1:{closed_port()}"
    with Client(KEY, origin) as client, pytest.raises(ShelfConnectionError) as raised:
        client.me()
    assert isinstance(raised.value, ShelfError) and not isinstance(raised.value, ShelfApiError)
    assert f"is it running at {origin}/developer/v1?" in str(raised.value)
    assert "ConnectError" in str(raised.value)
    # No httpx traceback chained to it: the message says it all.
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert_no_key(raised.value)
    with pytest.raises(ShelfConnectionError):
        asyncio.run(AsyncClient(KEY, origin).me())
