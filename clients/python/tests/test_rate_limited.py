"""A ``429 rate_limited`` is asked again after Retry-After. The burst accounts allow 2 requests a minute and
both were spent when the server started (conftest.py): these tests run last, so the wait is what is left
of that minute rather than a whole one."""

from __future__ import annotations

import asyncio
import time

import pytest

from shelfapi import AsyncClient, Client, RateLimitedError, RetryEvent

from .conftest import LiveServer, Recorder


@pytest.mark.last
@pytest.mark.asyncio
async def test_rate_limited_is_retried_after_retry_after_by_both_clients(live: LiveServer) -> None:
    if time.monotonic() - live.filled_at > 45:
        # A slow run: the windows filled at the start may be free by now. Fill them again (a full minute's wait).
        for account in ("burst", "burst-async"):
            with Client(live.keys[account], live.origin, max_retries=0) as client:
                while True:
                    try:
                        client.me()
                    except RateLimitedError:
                        break

    # With retrying off, the 429 is raised at once with its Retry-After (a rate_limited answer does not count
    # toward the window, so asking does not move the wait).
    refused = Recorder()
    with refused.http() as http, Client(live.keys["burst"], live.origin, max_retries=0, http_client=http) as client:
        with pytest.raises(RateLimitedError) as raised:
            client.me()
    assert (raised.value.status, raised.value.code) == (429, "rate_limited")
    assert raised.value.retry_after is not None and raised.value.retry_after >= 1
    assert raised.value.request_id == refused.attempts[0].request_id
    assert refused.statuses == [429]

    # Both clients at once, each on its own account: the waits overlap instead of adding up.
    sync_recorder, async_recorder = Recorder(), Recorder()
    sync_retries: list[RetryEvent] = []
    async_retries: list[RetryEvent] = []

    def blocking() -> str:
        with sync_recorder.http() as http, Client(
            live.keys["burst"], live.origin, max_retries=2, http_client=http, on_retry=sync_retries.append
        ) as client:
            return client.me()["plan"]

    async def awaiting() -> str:
        async with async_recorder.async_http() as http, AsyncClient(
            live.keys["burst-async"], live.origin, max_retries=2, http_client=http, on_retry=async_retries.append
        ) as client:
            return (await client.me())["plan"]

    plans = await asyncio.gather(asyncio.to_thread(blocking), awaiting())
    assert list(plans) == ["addon", "addon"]
    for recorder, retries in ((sync_recorder, sync_retries), (async_recorder, async_retries)):
        assert recorder.statuses == [429, 200]
        assert [(e.attempt, e.max_retries, e.status, e.code) for e in retries] == [(1, 2, 429, "rate_limited")]
        assert retries[0].request_id == recorder.attempts[0].request_id
        assert retries[0].wait_seconds >= 1, "waits what Retry-After says"
