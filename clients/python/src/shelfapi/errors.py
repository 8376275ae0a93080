"""Every non-2xx answer of the API becomes a ShelfApiError, of the subclass for its code; a call that gets no
answer raises ShelfConnectionError, one that gets no whole answer within its ``timeout`` ShelfTimeoutError.
All three are ShelfError."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Callable

import httpx

from ._redact import no_redaction

__all__ = [
    "ShelfError",
    "ShelfConnectionError",
    "ShelfTimeoutError",
    "ShelfApiError",
    "BadRequestError",
    "UnauthorizedError",
    "ForbiddenError",
    "InsufficientScopeError",
    "NotFoundError",
    "RateLimitedError",
    "QuotaExceededError",
    "ServerError",
    "ServiceUnavailableError",
    "ERROR_CLASSES",
]


class ShelfError(Exception):
    """Anything a call of the client raises about the API: catch this one for "the call did not work"."""


class ShelfConnectionError(ShelfError):
    """No answer at all: the connection was refused or broke (wrong ``base_url``, server not running, a
    network fault). The message says what happened and where."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        #: The URL requested.
        self.url = url


class ShelfTimeoutError(ShelfError):
    """No whole answer within the call's ``timeout`` (connecting, the body and any retries included)."""

    def __init__(self, message: str, *, url: str, timeout: float) -> None:
        super().__init__(message)
        #: The URL requested.
        self.url = url
        #: The client's ``timeout``, in seconds.
        self.timeout = timeout


class ShelfApiError(ShelfError):
    """An answer other than 2xx. ``code`` is the body's ``error`` field (``not_found``, ``quota_exceeded``...),
    or ``unexpected_response`` when the body is not the API's error shape (a proxy's page, say)."""

    def __init__(
        self,
        *,
        status: int,
        code: str,
        message: str,
        request_id: str | None,
        retry_after: int | None,
        url: str,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        #: HTTP status, e.g. 404.
        self.status = status
        #: The body's ``error`` field.
        self.code = code
        #: The server's message, for people.
        self.message = message
        #: The answer's ``X-Request-Id``: quote it when asking for support.
        self.request_id = request_id
        #: ``Retry-After`` in seconds when the answer had one (every 429 and 503 does).
        self.retry_after = retry_after
        #: The URL requested (the key is never part of it: it travels in the Authorization header).
        self.url = url

    @staticmethod
    def from_response(response: httpx.Response, redact: Callable[[str], str] = no_redaction) -> ShelfApiError:
        """The error for an answer whose body has been read. Every text taken from the answer goes through
        ``redact`` (the client passes one that removes its key): a proxy may echo the request back."""
        body = parse_error_body(response.content)
        code = body[0] if body else "unexpected_response"
        message = body[1] if body else f"HTTP {response.status_code} {response.reason_phrase}".strip()
        cls = ERROR_CLASSES.get(code, ShelfApiError)
        request_id = response.headers.get("x-request-id")
        return cls(
            status=response.status_code,
            code=redact(code),
            message=redact(message),
            request_id=None if request_id is None else redact(request_id),
            retry_after=parse_retry_after(response.headers.get("retry-after")),
            url=redact(str(response.request.url)),
        )


class BadRequestError(ShelfApiError):
    """400 ``bad_request``: a parameter the API refuses (the message names it)."""


class UnauthorizedError(ShelfApiError):
    """401 ``unauthorized``: missing, unknown, revoked or expired key."""


class ForbiddenError(ShelfApiError):
    """403 ``forbidden``: Developer API access is not active on the account."""


class InsufficientScopeError(ShelfApiError):
    """403 ``insufficient_scope``: the key lacks the endpoint's scope."""


class NotFoundError(ShelfApiError):
    """404 ``not_found``: no such item."""


class RateLimitedError(ShelfApiError):
    """429 ``rate_limited``: over the per-minute burst, still so after the client's retries."""


class QuotaExceededError(ShelfApiError):
    """429 ``quota_exceeded``: the month's quota is used up; ``retry_after`` points at the next month."""


class ServerError(ShelfApiError):
    """500 ``server_error``."""


class ServiceUnavailableError(ShelfApiError):
    """503 ``service_unavailable``: metering or the store is unreachable, still so after the retries."""


#: The class raised for each documented code (tests check it covers every code of openapi.json).
ERROR_CLASSES: dict[str, type[ShelfApiError]] = {
    "bad_request": BadRequestError,
    "unauthorized": UnauthorizedError,
    "forbidden": ForbiddenError,
    "insufficient_scope": InsufficientScopeError,
    "not_found": NotFoundError,
    "rate_limited": RateLimitedError,
    "quota_exceeded": QuotaExceededError,
    "server_error": ServerError,
    "service_unavailable": ServiceUnavailableError,
}


def parse_error_body(content: bytes) -> tuple[str, str] | None:
    """``(error, message)`` from the API's error shape ``{"error": ..., "message": ...}``, else None."""
    try:
        parsed = json.loads(content)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    error, message = parsed.get("error"), parsed.get("message")
    return (error, message) if isinstance(error, str) and isinstance(message, str) else None


#: ``Retry-After`` values are capped here (about 31,700 years): far past any wait the client would make, and
#: small enough for every arithmetic on it (``time.sleep`` overflows on a year-9999 date in seconds).
RETRY_AFTER_CEILING = 10**12
_SECONDS = re.compile(r"[0-9]+")


def parse_retry_after(value: str | None) -> int | None:
    """``Retry-After`` in seconds: the API sends whole seconds; HTTP also allows a date, which a proxy might
    send. Whatever the header holds, this returns None or a whole number in 0..RETRY_AFTER_CEILING: it
    never raises (an absurd value is an answer to refuse, not a crash in the client)."""
    if value is None:
        return None
    text = value.strip()
    # ASCII digits only (str.isdigit also accepts "²"); a huge number is not converted (int() refuses
    # strings over 4,300 digits), only recognised as "too long".
    if _SECONDS.fullmatch(text):
        digits = text.lstrip("0") or "0"
        return RETRY_AFTER_CEILING if len(digits) > 12 else min(int(digits), RETRY_AFTER_CEILING)
    try:
        when = parsedate_to_datetime(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return min(RETRY_AFTER_CEILING, max(0, int(-(-seconds // 1))))
