"""The asyncio client: the same methods as Client, awaitable; the iterators are async iterators."""

from __future__ import annotations

import asyncio
import os
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, TypeVar, cast

import httpx

from . import _core
from ._core import OnRetry
from ._csv import CsvSyntaxError, PriceRows
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

__all__ = ["AsyncClient"]

T = TypeVar("T")


class AsyncClient(_core.ClientBase):
    """A client of the shelfapi Developer API for asyncio: ``async with AsyncClient(key) as shelf: await shelf.me()``.

    ``AsyncClient(api_key, base_url="http://127.0.0.1:8080")``; use it in an ``async with`` block (or await
    ``aclose()``).
    The key goes in the ``Authorization`` header only. A ``429 rate_limited`` or a ``503`` is asked again
    after its ``Retry-After`` under the same rules as :class:`Client` (``max_retries``, ``max_retry_wait``,
    ``timeout`` for the whole call); every other error raises a :class:`ShelfApiError` at once.
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
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        """``http_client``: an httpx client of your own (proxies, event hooks); you close it, not this client."""
        super().__init__(api_key, base_url, max_retries, on_retry, timeout, max_retry_wait)
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.AsyncClient(timeout=timeout)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    # -- the endpoints ------------------------------------------------------------------------------------

    async def me(self) -> Me:
        """``GET /me``: the plan, the key's scopes, the limits and this month's usage (not counted in the quota)."""
        return cast(Me, await self._get_json("/me"))

    async def catalogue(
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
        return cast(CataloguePage, await self._get_json("/catalogue", params))

    async def catalogue_item(self, id: int) -> CatalogueItem:
        """``GET /catalogue/{id}``: one published item; :class:`NotFoundError` when there is none."""
        return cast(CatalogueItem, (await self._get_json(f"/catalogue/{int(id)}"))["data"])

    async def prices(
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
        return cast(PricesPage, await self._get_json("/prices", params))

    async def price(self, master_item_id: int) -> PriceRow:
        """``GET /prices/{masterItemId}``: the current price of one item."""
        return cast(PriceRow, (await self._get_json(f"/prices/{int(master_item_id)}"))["data"])

    async def collection(self, *, limit: int | None = None, offset: int | None = None) -> CollectionPage:
        """``GET /collection``: one page of the key's account's collection."""
        return cast(CollectionPage, await self._get_json("/collection", _core.query(limit=limit, offset=offset)))

    async def collection_value(self) -> CollectionValue:
        """``GET /collection/value``: how many items are owned and their estimated value."""
        return cast(CollectionValue, (await self._get_json("/collection/value"))["data"])

    async def collection_item(self, id: int) -> CollectionItem:
        """``GET /collection/{id}``: one row of the account's collection."""
        return cast(CollectionItem, (await self._get_json(f"/collection/{int(id)}"))["data"])

    async def listings(self, *, limit: int | None = None, offset: int | None = None) -> ListingsPage:
        """``GET /listings``: one page of the account's marketplace listings."""
        return cast(ListingsPage, await self._get_json("/listings", _core.query(limit=limit, offset=offset)))

    async def offers(self, *, limit: int | None = None, offset: int | None = None) -> OffersPage:
        """``GET /offers``: one page of the offers the account made."""
        return cast(OffersPage, await self._get_json("/offers", _core.query(limit=limit, offset=offset)))

    async def transactions(self, *, limit: int | None = None, offset: int | None = None) -> TransactionsPage:
        """``GET /transactions``: one page of the account's transactions, as buyer or seller."""
        return cast(TransactionsPage, await self._get_json("/transactions", _core.query(limit=limit, offset=offset)))

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
    ) -> AsyncIterator[CatalogueItem]:
        """Every item of ``/catalogue`` for these filters, from ``offset`` on, ``limit`` a request."""
        params = _core.query(search=search, platform=platform, category=category, upc=upc, limit=limit)
        return cast(AsyncIterator[CatalogueItem], self._items("/catalogue", params, offset))

    def iter_prices(
        self,
        *,
        search: str | None = None,
        platform: str | None = None,
        upc: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> AsyncIterator[PriceRow]:
        """Every row of ``/prices`` for these filters (for all of them at once, ``export_prices`` is one request)."""
        params = _core.query(search=search, platform=platform, upc=upc, limit=limit)
        return cast(AsyncIterator[PriceRow], self._items("/prices", params, offset))

    def iter_collection(self, *, limit: int | None = None, offset: int | None = None) -> AsyncIterator[CollectionItem]:
        """Every row of the account's collection."""
        return cast(AsyncIterator[CollectionItem], self._items("/collection", _core.query(limit=limit), offset))

    def iter_listings(self, *, limit: int | None = None, offset: int | None = None) -> AsyncIterator[Listing]:
        """Every listing of the account."""
        return cast(AsyncIterator[Listing], self._items("/listings", _core.query(limit=limit), offset))

    def iter_offers(self, *, limit: int | None = None, offset: int | None = None) -> AsyncIterator[Offer]:
        """Every offer the account made."""
        return cast(AsyncIterator[Offer], self._items("/offers", _core.query(limit=limit), offset))

    def iter_transactions(self, *, limit: int | None = None, offset: int | None = None) -> AsyncIterator[Transaction]:
        """Every transaction of the account."""
        return cast(AsyncIterator[Transaction], self._items("/transactions", _core.query(limit=limit), offset))

    # -- the CSV export -----------------------------------------------------------------------------------

    async def export_prices(
        self, *, search: str | None = None, platform: str | None = None, upc: str | None = None
    ) -> AsyncGenerator[PriceRow, None]:
        """``GET /prices/export.csv`` read as it arrives: every row of ``/prices`` for these filters, in one
        request (one count against the quota), as the rows ``/prices`` answers. Stop early
        (``await rows.aclose()``) and the download is closed."""
        rows = PriceRows()
        try:
            async with self._stream("/prices/export.csv", _core.query(search=search, platform=platform, upc=upc)) as (
                response,
                deadline,
            ):
                async for text in self._bounded(response.aiter_text(), deadline):
                    for row in rows.push(text):
                        yield row
            for row in rows.end():
                yield row
        except ValueError as error:
            # A bad record's text is quoted in the message: it came from the server, so it may hold the key.
            raise CsvSyntaxError(self._redact(str(error))) from None

    async def export_prices_to(
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
            async with self._stream("/prices/export.csv", _core.query(search=search, platform=platform, upc=upc)) as (
                response,
                deadline,
            ):
                async for chunk in self._bounded(response.aiter_bytes(), deadline):
                    file.write(chunk)
                    size += len(chunk)
        return size

    # -- the plumbing -------------------------------------------------------------------------------------

    async def _get_json(self, path: str, params: Mapping[str, str | int] | None = None) -> Any:
        async with self._stream(path, params) as (response, deadline):
            await self._within(deadline, response.aread)
            return _core.json_body(response, self._redact)

    async def _items(self, path: str, params: dict[str, str | int], offset: int | None) -> AsyncIterator[Any]:
        position: int | None = offset or 0
        while position is not None:
            page = await self._get_json(path, {**params, "offset": position})
            for item in page["data"]:
                yield item
            position = _core.next_offset(path, page, position)

    @staticmethod
    async def _within(deadline: _core.Deadline, step: Callable[[], Awaitable[T]]) -> T:
        """One network step, cancelled when the call's deadline passes (a trickle of bytes never lets
        httpx's per-read timeout fire); httpx's errors become the client's own."""
        with deadline.network():
            try:
                return await asyncio.wait_for(step(), max(deadline.left(), 0.0))
            except asyncio.TimeoutError:
                raise deadline.error() from None

    async def _bounded(self, chunks: AsyncIterator[T], deadline: _core.Deadline) -> AsyncIterator[T]:
        """The chunks of a body, each read within the call's deadline. The time the caller spends on a chunk
        is given back: ``timeout`` bounds the server, not the caller."""
        while True:
            try:
                chunk = await self._within(deadline, chunks.__anext__)
            except StopAsyncIteration:
                return
            handed = time.monotonic()
            yield chunk
            deadline.at += time.monotonic() - handed

    @asynccontextmanager
    async def _stream(
        self, path: str, params: Mapping[str, str | int] | None = None
    ) -> AsyncIterator[tuple[httpx.Response, _core.Deadline]]:
        """The 2xx answer to ``GET path``, its body not yet read, after the retries, and the call's deadline
        (for reading the body); else raises the error."""
        request = self._http.build_request("GET", self.base_url + path, params=params, headers=self._headers)
        deadline = _core.Deadline(self, str(request.url))
        attempt = 0
        while True:
            request.extensions["timeout"] = deadline.httpx_timeout().as_dict()
            response = await self._within(deadline, lambda: self._http.send(request, stream=True))
            self._note(response)
            if response.is_success:
                break
            try:
                await self._within(deadline, response.aread)
            finally:
                await response.aclose()
            attempt += 1
            await asyncio.sleep(_core.wait_before_retry(response, attempt, self, deadline))
        try:
            yield response, deadline
        finally:
            await response.aclose()
