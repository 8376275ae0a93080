"""The blocking client: one method per endpoint of the Developer API."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Any, Generator, Iterator, Mapping, cast

import httpx

from . import _core
from ._core import OnRetry
from ._csv import PriceRows
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


class Client(_core.ClientBase):
    """A client of the shelfapi Developer API.

    ``Client(api_key, base_url="http://127.0.0.1:8080")``; use it in a ``with`` block (or call ``close()``).
    The key goes in the ``Authorization`` header only. A ``429 rate_limited`` or a ``503`` is asked again
    after its ``Retry-After``, at most ``max_retries`` times (default 3; 0 turns retrying off); every other
    error, ``quota_exceeded`` included, raises a :class:`ShelfApiError` at once.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str = _core.DEFAULT_BASE_URL,
        *,
        max_retries: int = _core.DEFAULT_MAX_RETRIES,
        timeout: float = _core.DEFAULT_TIMEOUT,
        on_retry: OnRetry | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        """``http_client``: an httpx client of your own (proxies, event hooks); you close it, not this client."""
        super().__init__(api_key, base_url, max_retries, on_retry)
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)

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
        with self._stream("/prices/export.csv", _core.query(search=search, platform=platform, upc=upc)) as response:
            for text in response.iter_text():
                yield from rows.push(text)
        yield from rows.end()

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
            with self._stream("/prices/export.csv", _core.query(search=search, platform=platform, upc=upc)) as response:
                for chunk in response.iter_bytes():
                    file.write(chunk)
                    size += len(chunk)
        return size

    # -- the plumbing -------------------------------------------------------------------------------------

    def _get_json(self, path: str, params: Mapping[str, str | int] | None = None) -> Any:
        with self._stream(path, params) as response:
            response.read()
            return _core.json_body(response)

    def _items(self, path: str, params: dict[str, str | int], offset: int | None) -> Iterator[Any]:
        position: int | None = offset or 0
        while position is not None:
            page = self._get_json(path, {**params, "offset": position})
            yield from page["data"]
            position = _core.next_offset(path, page, position)

    @contextmanager
    def _stream(self, path: str, params: Mapping[str, str | int] | None = None) -> Iterator[httpx.Response]:
        """The 2xx answer to ``GET path``, its body not yet read, after the retries; else raises the error."""
        request = self._http.build_request("GET", self.base_url + path, params=params, headers=self._headers)
        attempt = 0
        while True:
            response = self._http.send(request, stream=True)
            self._note(response)
            if response.is_success:
                break
            try:
                response.read()
            finally:
                response.close()
            attempt += 1
            wait = _core.wait_before_retry(response, attempt, self.max_retries, self._on_retry)
            time.sleep(wait)
        try:
            yield response
        finally:
            response.close()
