"""What Client and AsyncClient share: URLs, parameters, the retry rule, the rate-limit headers, paging."""

from __future__ import annotations

import math
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterator, Mapping

import httpx

from ._redact import Redactor
from ._transport import DEADLINE
from .errors import ShelfApiError, ShelfConnectionError, ShelfTimeoutError, parse_error_body, parse_retry_after

API_PREFIX = "/developer/v1"
DEFAULT_BASE_URL = "http://127.0.0.1:8080"
DEFAULT_MAX_RETRIES = 3
#: Seconds for a whole call: connecting, the answer, its body, and every retry and wait between them. Room
#: for one whole burst wait (a ``rate_limited`` Retry-After is at most 60 s) and the requests around it: a
#: shorter default would turn the retries of the burst limit off. Lower it to give up sooner on a silent server.
DEFAULT_TIMEOUT = 120.0
#: The longest ``Retry-After`` the client waits out (a burst wait is at most 60 s); a longer one is raised at
#: once, with its ``retry_after``: a proxy's "99999999" or a date in the year 9999 must not hang a script.
DEFAULT_MAX_RETRY_WAIT = 60.0
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
    def from_headers(headers: httpx.Headers, redact: Redactor | None = None) -> RateLimit:
        def integer(name: str) -> int | None:
            value = headers.get(name)
            return int(value) if value is not None and value.strip().isdigit() else None

        return RateLimit(
            limit=integer("x-ratelimit-limit"),
            remaining=integer("x-ratelimit-remaining"),
            reset=integer("x-ratelimit-reset"),
            policy=redact.optional(headers.get("ratelimit-policy")) if redact else headers.get("ratelimit-policy"),
            state=redact.optional(headers.get("ratelimit")) if redact else headers.get("ratelimit"),
        )


OnRetry = Callable[[RetryEvent], None]


class ClientBase:
    """The state both clients keep: where the API is, the key's headers, the retry settings, and what the
    last answer said about the limits."""

    def __init__(
        self,
        api_key: str,
        base_url: str,
        max_retries: int,
        on_retry: OnRetry | None,
        timeout: float,
        max_retry_wait: float,
    ) -> None:
        check_options(api_key, max_retries)
        #: ``<server>/developer/v1``, what every path is relative to.
        self.base_url = api_base(base_url)
        self.max_retries = max_retries
        #: Seconds a whole call may take, retries and their waits included.
        self.timeout = seconds_option("timeout", timeout, allow_zero=False)
        #: The longest ``Retry-After`` waited out; a longer one is raised at once.
        self.max_retry_wait = seconds_option("max_retry_wait", max_retry_wait, allow_zero=True)
        self._on_retry = on_retry
        #: Removes the key from every text the client makes from an answer (a proxy may echo it).
        self._redact = Redactor(api_key)
        self._headers = {"authorization": f"Bearer {api_key}", "user-agent": USER_AGENT}
        #: The rate-limit headers of the last answer (None before the first).
        self.rate_limit: RateLimit | None = None
        #: The ``X-Request-Id`` of the last answer (None before the first).
        self.last_request_id: str | None = None

    def __repr__(self) -> str:
        # Never the key.
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    def _note(self, response: httpx.Response) -> None:
        self.rate_limit = RateLimit.from_headers(response.headers, self._redact)
        self.last_request_id = self._redact.optional(response.headers.get("x-request-id"))


def api_base(base_url: str) -> str:
    """``<server>/developer/v1``; a base URL given with the prefix (and a trailing slash) is accepted too."""
    trimmed = base_url.rstrip("/")
    return trimmed if trimmed.endswith(API_PREFIX) else trimmed + API_PREFIX


def check_options(api_key: str, max_retries: int) -> None:
    if not isinstance(api_key, str) or api_key.strip() == "":
        raise ValueError("api_key is required")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError("max_retries must be a whole number >= 0")


def seconds_option(name: str, value: float, *, allow_zero: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of seconds")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}")
    return float(value)


class Deadline:
    """The end of one call, ``timeout`` seconds after it starts: connecting, every attempt's answer and body,
    and the waits between attempts all come out of the same time."""

    def __init__(self, client: ClientBase, url: str) -> None:
        self._client = client
        self.url = client._redact(url)
        self.at = time.monotonic() + client.timeout

    def left(self) -> float:
        return self.at - time.monotonic()

    def error(self) -> ShelfTimeoutError:
        timeout = self._client.timeout
        return ShelfTimeoutError(f"GET {self.url}: no whole answer within timeout={timeout:g} s", url=self.url, timeout=timeout)

    def check(self) -> None:
        """Raises the timeout once it has passed (between the chunks of a body, whatever the transport)."""
        if self.left() <= 0:
            raise self.error()

    def httpx_timeout(self) -> httpx.Timeout:
        """Each network operation's own limit: what is left (an http_client of the caller's has no bounded
        streams; with it a trickle is caught between chunks instead)."""
        return httpx.Timeout(max(self.left(), 0.001))

    @contextmanager
    def network(self) -> Iterator[None]:
        """Around every network step of the call: bounds it by the deadline (``DEADLINE``, read by the blocking
        client's transport) and turns httpx's errors into the client's own, key removed, without httpx's
        traceback (its text is kept in the message)."""
        self.check()
        token = DEADLINE.set(self.at)
        try:
            yield
        except httpx.TimeoutException:
            raise self.error() from None
        except httpx.TransportError as error:
            detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            message = f"GET {self.url}: no answer from the server ({detail}); is it running at {self._client.base_url}?"
            raise ShelfConnectionError(self._client._redact(message), url=self.url) from None
        finally:
            DEADLINE.reset(token)


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


def wait_before_retry(response: httpx.Response, attempt: int, client: ClientBase, deadline: Deadline) -> int:
    """Seconds to wait before asking again after the failed ``attempt`` (counting from 1), having told
    ``on_retry``; raises the answer's error (``retry_after`` set) when it is not worth asking again, the
    retries are spent, or the wait is longer than ``max_retry_wait`` or than what is left of the call's
    timeout: waiting would not give an answer in time, so the caller learns at once when to come back.
    The body must have been read."""
    verdict = retry_verdict(response)
    if verdict is None or attempt > client.max_retries:
        raise ShelfApiError.from_response(response, client._redact)
    code, wait = verdict
    if wait > client.max_retry_wait or wait >= deadline.left():
        raise ShelfApiError.from_response(response, client._redact)
    if client._on_retry is not None:
        client._on_retry(
            RetryEvent(
                attempt=attempt,
                max_retries=client.max_retries,
                status=response.status_code,
                code=client._redact(code),
                wait_seconds=wait,
                request_id=client._redact.optional(response.headers.get("x-request-id")),
                url=client._redact(str(response.request.url)),
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


def without_body(response: httpx.Response, redact: Redactor) -> ShelfApiError:
    """A 2xx that is not the JSON the API always sends (a proxy in the way, say)."""
    return ShelfApiError(
        status=response.status_code,
        code="unexpected_response",
        message=f"HTTP {response.status_code} without the JSON body the API sends",
        request_id=redact.optional(response.headers.get("x-request-id")),
        retry_after=None,
        url=redact(str(response.request.url)),
    )


def json_body(response: httpx.Response, redact: Redactor) -> Any:
    try:
        return response.json()
    except ValueError:
        raise without_body(response, redact) from None


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
