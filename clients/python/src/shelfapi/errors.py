"""Every non-2xx answer of the API becomes a ShelfApiError, of the subclass for its code."""

from __future__ import annotations

import json
from email.utils import parsedate_to_datetime
from datetime import datetime, timezone

import httpx

__all__ = [
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


class ShelfApiError(Exception):
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
    def from_response(response: httpx.Response) -> ShelfApiError:
        """The error for an answer whose body has been read."""
        body = parse_error_body(response.content)
        code = body[0] if body else "unexpected_response"
        message = body[1] if body else f"HTTP {response.status_code} {response.reason_phrase}".strip()
        cls = ERROR_CLASSES.get(code, ShelfApiError)
        return cls(
            status=response.status_code,
            code=code,
            message=message,
            request_id=response.headers.get("x-request-id"),
            retry_after=parse_retry_after(response.headers.get("retry-after")),
            url=str(response.request.url),
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


def parse_retry_after(value: str | None) -> int | None:
    """``Retry-After`` in seconds: the API sends whole seconds; HTTP also allows a date, which a proxy might send."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return int(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0, int(-(-(when - datetime.now(timezone.utc)).total_seconds() // 1)))
