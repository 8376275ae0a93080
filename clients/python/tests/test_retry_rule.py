"""Which answers are asked again, and after how long: the rule both clients apply (a 503 cannot be provoked
on the live server of these tests, which refuses to start without its store; the TypeScript client's
tests take one from a private Redis they stop)."""

from __future__ import annotations

import json
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from shelfapi._core import FALLBACK_WAIT_SECONDS, retry_verdict
from shelfapi.errors import parse_retry_after


def answer(status: int, body: object = None, **headers: str) -> httpx.Response:
    content = b"" if body is None else json.dumps(body).encode()
    response = httpx.Response(status, content=content, headers=headers, request=httpx.Request("GET", "http://x/developer/v1/me"))
    response.read()
    return response


@pytest.mark.parametrize(
    ("response", "verdict"),
    [
        (answer(503, {"error": "service_unavailable", "message": "m"}, **{"retry-after": "2"}), ("service_unavailable", 2)),
        (answer(503, **{"content-type": "text/html"}), ("unexpected_response", FALLBACK_WAIT_SECONDS)),
        (answer(429, {"error": "rate_limited", "message": "m"}, **{"retry-after": "17"}), ("rate_limited", 17)),
        (answer(429, {"error": "rate_limited", "message": "m"}), ("rate_limited", FALLBACK_WAIT_SECONDS)),
        (answer(429, {"error": "quota_exceeded", "message": "m"}, **{"retry-after": "3600"}), None),
        (answer(429), None),
        (answer(500, {"error": "server_error", "message": "m"}), None),
        (answer(404, {"error": "not_found", "message": "m"}), None),
    ],
)
def test_only_503_and_rate_limited_are_retried(response: httpx.Response, verdict: tuple[str, int] | None) -> None:
    assert retry_verdict(response) == verdict


def test_retry_after_as_seconds_or_as_a_date() -> None:
    assert parse_retry_after("42") == 42
    assert parse_retry_after(" 7 ") == 7
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=90), usegmt=True)
    assert 88 <= (parse_retry_after(later) or 0) <= 91
    assert parse_retry_after(format_datetime(datetime(2000, 1, 1, tzinfo=timezone.utc), usegmt=True)) == 0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
