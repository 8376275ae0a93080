"""The blocking client: one method per endpoint of the Developer API."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Any, Generator, Iterator, Mapping, TypeVar, cast

import httpx

from . import _core
from ._core import OnRetry
from ._csv import CsvSyntaxError, PriceRows
from ._transport import bounded_transport
from .models import (
    CatalogueItem,
    CataloguePage,
    CollectionItem,
    CollectionPage,
    CollectionValue,
    Listing,
    ListingsPage,
    Me,
    Offer,
    OffersPage,
    PriceRow,
    PricesPage,
    Transaction,
    TransactionsPage,
)

__all__ = ["Client"]

T = TypeVar("T")


class Client(_core.ClientBase):
    """A client of the shelfapi Developer API.

    ``Client(api_key, base_url="http://127.0.0.1:8080")``; use it in a ``with`` block (or call ``close()``).
    The key goes in the ``Authorization`` header only. A ``429 rate_limited`` or a ``503`` is asked again
    after its ``Retry-After``, at most ``max_retries`` times (default 3; 0 turns retrying off), when that
    wait is at most ``max_retry_wait`` seconds (default 60) and ends within the call's ``timeout``; every
    other error, ``quota_exceeded`` included, raises a :class:`ShelfApiError` at once. ``timeout`` (default
    120 s) bounds each whole call: connecting, the answer and its body, retries and waits included
    (:class:`ShelfTimeoutError`); no answer at all is a :class:`ShelfConnectionError`. No exception or
    ``on_retry`` event holds the key, even when a server or proxy echoes it.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str = _core.DEFAULT_BASE_URL,
        *,
        max_retries: int = _core.DEFAULT_MAX_RETRIES,
        timeout: float = _core.DEFAULT_TIMEOUT,
        max_retry_wait: float = _core.DEFAULT_MAX_RETRY_WAIT,
        on_retry: OnRetry | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        """``http_client``: an httpx client of your own (proxies, event hooks); you close it, not this client.
        With it, a server trickling its headers is bounded by each read only (its transport is yours)."""
        super().__init__(api_key, base_url, max_retries, on_retry, timeout, max_retry_wait)
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout, transport=bounded_transport())

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    # -- the endpoints ------------------------------------------------------------------------------------

    def me(self) -> Me:
        """``GET /me``: the plan, the key's scopes, the limits and this month's usage (not counted in the quota)."""
        return cast(Me, self._get_json("/me"))

    def catalogue(
        self,
        *,
        search: str | None = None,
        platform: str | None = None,
        category: str | None = None,
        upc: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> CataloguePage:
        """``GET /catalogue``: one page of published items, ascending ``masterItemId``."""
        params = _core.query(search=search, platform=platform, category=category, upc=upc, limit=limit, offset=offset)
        return cast(CataloguePage, self._get_json("/catalogue", params))

    def catalogue_item(self, id: int) -> CatalogueItem:
        """``GET /catalogue/{id}``: one published item; :class:`NotFoundError` when there is none."""
        return cast(CatalogueItem, self._get_json(f"/catalogue/{int(id)}")["data"])

    def prices(
        self,
        *,
        search: str | None = None,
        platform: str | None = None,
        upc: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> PricesPage:
        """``GET /prices``: one page of current prices, one row per priced published item."""
        params = _core.query(search=search, platform=platform, upc=upc, limit=limit, offset=offset)
        return cast(PricesPage, self._get_json("/prices", params))

    def price(self, master_item_id: int) -> PriceRow:
        """``GET /prices/{masterItemId}``: the current price of one item."""
        return cast(PriceRow, self._get_json(f"/prices/{int(master_item_id)}")["data"])

    def collection(self, *, limit: int | None = None, offset: int | None = None) -> CollectionPage:
        """``GET /collection``: one page of the key's account's collection."""
        return cast(CollectionPage, self._get_json("/collection", _core.query(limit=limit, offset=offset)))

    def collection_value(self) -> CollectionValue:
        """``GET /collection/value``: how many items are owned and their estimated value."""
        return cast(CollectionValue, self._get_json("/collection/value")["data"])

    def collection_item(self, id: int) -> CollectionItem:
        """``GET /collection/{id}``: one row of the account's collection."""
        return cast(CollectionItem, self._get_json(f"/collection/{int(id)}")["data"])

    def listings(self, *, limit: int | None = None, offset: int | None = None) -> ListingsPage:
        """``GET /listings``: one page of the account's marketplace listings."""
        return cast(ListingsPage, self._get_json("/listings", _core.query(limit=limit, offset=offset)))

    def offers(self, *, limit: int | None = None, offset: int | None = None) -> OffersPage:
        """``GET /offers``: one page of the offers the account made."""
        return cast(OffersPage, self._get_json("/offers", _core.query(limit=limit, offset=offset)))

    def transactions(self, *, limit: int | None = None, offset: int | None = None) -> TransactionsPage:
        """``GET /transactions``: one page of the account's transactions, as buyer or seller."""
        return cast(TransactionsPage, self._get_json("/transactions", _core.query(limit=limit, offset=offset)))

    # -- every page ---------------------------------------------------------------------------------------

    def iter_catalogue(
        self,
        *,
        search: str | None = None,
        platform: str | None = None,
        category: str | None = None,
        upc: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> Iterator[CatalogueItem]:
        """Every item of ``/catalogue`` for these filters, from ``offset`` on, ``limit`` a request."""
        params = _core.query(search=search, platform=platform, category=category, upc=upc, limit=limit)
        return cast(Iterator[CatalogueItem], self._items("/catalogue", params, offset))

    def iter_prices(
        self,
        *,
        search: str | None = None,
        platform: str | None = None,
        upc: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> Iterator[PriceRow]:
        """Every row of ``/prices`` for these filters (for all of them at once, ``export_prices`` is one request)."""
        params = _core.query(search=search, platform=platform, upc=upc, limit=limit)
        return cast(Iterator[PriceRow], self._items("/prices", params, offset))

    def iter_collection(self, *, limit: int | None = None, offset: int | None = None) -> Iterator[CollectionItem]:
        """Every row of the account's collection."""
        return cast(Iterator[CollectionItem], self._items("/collection", _core.query(limit=limit), offset))

    def iter_listings(self, *, limit: int | None = None, offset: int | None = None) -> Iterator[Listing]:
        """Every listing of the account."""
        return cast(Iterator[Listing], self._items("/listings", _core.query(limit=limit), offset))

    def iter_offers(self, *, limit: int | None = None, offset: int | None = None) -> Iterator[Offer]:
        """Every offer the account made."""
        return cast(Iterator[Offer], self._items("/offers", _core.query(limit=limit), offset))

    def iter_transactions(self, *, limit: int | None = None, offset: int | None = None) -> Iterator[Transaction]:
        """Every transaction of the account."""
        return cast(Iterator[Transaction], self._items("/transactions", _core.query(limit=limit), offset))

    # -- the CSV export -----------------------------------------------------------------------------------

    def export_prices(
        self, *, search: str | None = None, platform: str | None = None, upc: str | None = None
    ) -> Generator[PriceRow, None, None]:
        """``GET /prices/export.csv`` read as it arrives: every row of ``/prices`` for these filters, in one
        request (one count against the quota), as the rows ``/prices`` answers. Stop early
        (``close()`` it, or leave the loop and drop it) and the download is closed."""
        rows = PriceRows()
        try:
            with self._stream("/prices/export.csv", _core.query(search=search, platform=platform, upc=upc)) as (
                response,
                deadline,
            ):
                for text in self._bounded(response.iter_text(), deadline):
                    yield from rows.push(text)
            yield from rows.end()
        except ValueError as error:
            # A bad record's text is quoted in the message: it came from the server, so it may hold the key.
            raise CsvSyntaxError(self._redact(str(error))) from None

    def export_prices_to(
        self,
        path: str | os.PathLike[str],
        *,
        search: str | None = None,
        platform: str | None = None,
        upc: str | None = None,
    ) -> int:
        """Writes ``GET /prices/export.csv`` to ``path`` byte for byte as sent, and returns its size. The file
        appears whole or not at all: it is written beside, as ``<path>.part``, and renamed when complete."""
        size = 0
        with _core.whole_file(path) as file:
            with self._stream("/prices/export.csv", _core.query(search=search, platform=platform, upc=upc)) as (
                response,
                deadline,
            ):
                for chunk in self._bounded(response.iter_bytes(), deadline):
                    file.write(chunk)
                    size += len(chunk)
        return size

    # -- the plumbing -------------------------------------------------------------------------------------

    def _get_json(self, path: str, params: Mapping[str, str | int] | None = None) -> Any:
        with self._stream(path, params) as (response, deadline):
            with deadline.network():
                response.read()
            return _core.json_body(response, self._redact)

    def _items(self, path: str, params: dict[str, str | int], offset: int | None) -> Iterator[Any]:
        position: int | None = offset or 0
        while position is not None:
            page = self._get_json(path, {**params, "offset": position})
            yield from page["data"]
            position = _core.next_offset(path, page, position)

    @staticmethod
    def _bounded(chunks: Iterator[T], deadline: _core.Deadline) -> Iterator[T]:
        """The chunks of a body, each read within the call's deadline. The time the caller spends on a chunk
        (writing rows to a database, say) is given back: ``timeout`` bounds the server, not the caller."""
        while True:
            with deadline.network():
                chunk = next(chunks, None)
            if chunk is None:
                return
            handed = time.monotonic()
            yield chunk
            deadline.at += time.monotonic() - handed

    @contextmanager
    def _stream(
        self, path: str, params: Mapping[str, str | int] | None = None
    ) -> Iterator[tuple[httpx.Response, _core.Deadline]]:
        """The 2xx answer to ``GET path``, its body not yet read, after the retries, and the call's deadline
        (for reading the body); else raises the error."""
        request = self._http.build_request("GET", self.base_url + path, params=params, headers=self._headers)
        deadline = _core.Deadline(self, str(request.url))
        attempt = 0
        while True:
            request.extensions["timeout"] = deadline.httpx_timeout().as_dict()
            with deadline.network():
                response = self._http.send(request, stream=True)
            self._note(response)
            if response.is_success:
                break
            try:
                with deadline.network():
                    response.read()
            finally:
                response.close()
            attempt += 1
            time.sleep(_core.wait_before_retry(response, attempt, self, deadline))
        try:
            yield response, deadline
        finally:
            response.close()
