"""What Client and AsyncClient share: URLs, parameters, the retry rule, the rate-limit headers, paging."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterator, Mapping

import httpx

from .errors import ShelfApiError, parse_error_body, parse_retry_after

API_PREFIX = "/developer/v1"
DEFAULT_BASE_URL = "http://127.0.0.1:8080"
DEFAULT_MAX_RETRIES = 3
DEFAULT_TIMEOUT = 30.0
#: Used when a 503 or a ``rate_limited`` 429 has no usable ``Retry-After`` (the API always sends one; a
#: proxy might not): short enough not to stall a script, long enough not to hammer a struggling server.
FALLBACK_WAIT_SECONDS = 1
USER_AGENT = "shelfapi-python/0.1.0"


@dataclass(frozen=True)
class RetryEvent:
    """What ``on_retry`` is told before the client waits and asks again."""

    #: The attempt that failed, counting from 1.
    attempt: int
    #: Retries allowed in all (``max_retries``).
    max_retries: int
    status: int
    #: ``rate_limited`` or ``service_unavailable`` (``unexpected_response`` for a 503 without the API's body).
    code: str
    #: How long the client waits before the next attempt.
    wait_seconds: int
    request_id: str | None
    url: str


@dataclass(frozen=True)
class RateLimit:
    """The rate-limit headers of an answer; None where the answer had no such header (``/me`` has no quota ones)."""

    #: ``X-RateLimit-Limit``: the account's monthly quota.
    limit: int | None
    #: ``X-RateLimit-Remaining``: requests left this month, after this one.
    remaining: int | None
    #: ``X-RateLimit-Reset``: Unix time (seconds) when the quota resets.
    reset: int | None
    #: ``RateLimit-Policy``, e.g. ``"burst";q=120;w=60, "quota";q=50000;w=2592000``.
    policy: str | None
    #: ``RateLimit``, e.g. ``"burst";r=119;t=60, "quota";r=49999;t=1234567``.
    state: str | None

    @staticmethod
    def from_headers(headers: httpx.Headers) -> RateLimit:
        def integer(name: str) -> int | None:
            value = headers.get(name)
            return int(value) if value is not None and value.strip().isdigit() else None

        return RateLimit(
            limit=integer("x-ratelimit-limit"),
            remaining=integer("x-ratelimit-remaining"),
            reset=integer("x-ratelimit-reset"),
            policy=headers.get("ratelimit-policy"),
            state=headers.get("ratelimit"),
        )


OnRetry = Callable[[RetryEvent], None]


class ClientBase:
    """The state both clients keep: where the API is, the key's headers, the retry settings, and what the
    last answer said about the limits."""

    def __init__(self, api_key: str, base_url: str, max_retries: int, on_retry: OnRetry | None) -> None:
        check_options(api_key, max_retries)
        #: ``<server>/developer/v1``, what every path is relative to.
        self.base_url = api_base(base_url)
        self.max_retries = max_retries
        self._on_retry = on_retry
        self._headers = {"authorization": f"Bearer {api_key}", "user-agent": USER_AGENT}
        #: The rate-limit headers of the last answer (None before the first).
        self.rate_limit: RateLimit | None = None
        #: The ``X-Request-Id`` of the last answer (None before the first).
        self.last_request_id: str | None = None

    def __repr__(self) -> str:
        # Never the key.
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    def _note(self, response: httpx.Response) -> None:
        self.rate_limit = RateLimit.from_headers(response.headers)
        self.last_request_id = response.headers.get("x-request-id")


def api_base(base_url: str) -> str:
    """``<server>/developer/v1``; a base URL given with the prefix (and a trailing slash) is accepted too."""
    trimmed = base_url.rstrip("/")
    return trimmed if trimmed.endswith(API_PREFIX) else trimmed + API_PREFIX


def check_options(api_key: str, max_retries: int) -> None:
    if not isinstance(api_key, str) or api_key.strip() == "":
        raise ValueError("api_key is required")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError("max_retries must be a whole number >= 0")


def query(**params: Any) -> dict[str, str | int]:
    """The query string's parameters: the ones given (None means not given)."""
    return {name: value for name, value in params.items() if value is not None}


def retry_verdict(response: httpx.Response) -> tuple[str, int] | None:
    """``(code, seconds to wait)`` when the answer is worth asking again, else None. Only two are: a 503 and
    a 429 ``rate_limited`` both say "the same request will work later" and say when. ``quota_exceeded`` also
    says when, but that is next month; every other error is the caller's and would fail the same way.
    The body must have been read."""
    if response.status_code not in (429, 503):
        return None
    body = parse_error_body(response.content)
    if response.status_code == 429 and (body is None or body[0] != "rate_limited"):
        return None
    wait = parse_retry_after(response.headers.get("retry-after"))
    return (body[0] if body else "unexpected_response", FALLBACK_WAIT_SECONDS if wait is None else wait)


def wait_before_retry(response: httpx.Response, attempt: int, max_retries: int, on_retry: OnRetry | None) -> int:
    """Seconds to wait before asking again after the failed ``attempt`` (counting from 1), having told
    ``on_retry``; raises the answer's error when it is not worth asking again or the retries are spent.
    The body must have been read."""
    verdict = retry_verdict(response)
    if verdict is None or attempt > max_retries:
        raise ShelfApiError.from_response(response)
    code, wait = verdict
    if on_retry is not None:
        on_retry(
            RetryEvent(
                attempt=attempt,
                max_retries=max_retries,
                status=response.status_code,
                code=code,
                wait_seconds=wait,
                request_id=response.headers.get("x-request-id"),
                url=str(response.request.url),
            )
        )
    return wait


@contextmanager
def whole_file(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A file to write ``path`` through that appears whole or not at all: written beside as ``<path>.part``,
    renamed over ``path`` when the block ends, removed when it raises (or is interrupted)."""
    partial = f"{os.fspath(path)}.part"
    try:
        with open(partial, "wb") as file:
            yield file
        os.replace(partial, path)
    except BaseException:
        if os.path.exists(partial):
            os.remove(partial)
        raise


def without_body(response: httpx.Response) -> ShelfApiError:
    """A 2xx that is not the JSON the API always sends (a proxy in the way, say)."""
    return ShelfApiError(
        status=response.status_code,
        code="unexpected_response",
        message=f"HTTP {response.status_code} without the JSON body the API sends",
        request_id=response.headers.get("x-request-id"),
        retry_after=None,
        url=str(response.request.url),
    )


def json_body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise without_body(response) from None


def next_offset(path: str, page: Mapping[str, Any], offset: int) -> int | None:
    """Where the next page starts, or None after the last one."""
    if not page["pagination"]["hasMore"]:
        return None
    # The API promises hasMore = offset + len(data) < total: an empty page claiming more would loop forever.
    if len(page["data"]) == 0:
        raise ShelfApiError(
            status=200,
            code="unexpected_response",
            message=f"{path}: an empty page at offset {offset} says hasMore",
            request_id=None,
            retry_after=None,
            url=path,
        )
    return offset + len(page["data"])
