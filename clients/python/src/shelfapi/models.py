# Generated from openapi.json by clients/python/scripts/generate-models.ts: do not edit.
# Regenerate with `npm run openapi` (or `npm run generate:python`); a test fails while this is stale.
"""Typed models of the shelfapi Developer API's answers, field names as the API spells them."""

from __future__ import annotations

from typing import Literal, TypedDict

__all__ = [
    'ErrorCode',
    'ERROR_CODES',
    'MeLimits',
    'MeUsage',
    'Me',
    'CatalogueItem',
    'Pagination',
    'CataloguePage',
    'PriceRow',
    'PricesPage',
    'CollectionItem',
    'CollectionPage',
    'CollectionValue',
    'Listing',
    'ListingsPage',
    'Offer',
    'OffersPage',
    'Transaction',
    'TransactionsPage',
]

#: Every `error` code the API documents for its answers.
ErrorCode = Literal['bad_request', 'unauthorized', 'forbidden', 'rate_limited', 'server_error', 'service_unavailable', 'insufficient_scope', 'quota_exceeded', 'not_found']
ERROR_CODES: tuple[ErrorCode, ...] = ('bad_request', 'unauthorized', 'forbidden', 'rate_limited', 'server_error', 'service_unavailable', 'insufficient_scope', 'quota_exceeded', 'not_found')


class MeLimits(TypedDict):
    monthly: int
    perMinute: int


class MeUsage(TypedDict):
    #: Current UTC month, YYYY-MM
    period: str
    used: int
    #: limits.monthly - used, never below 0
    remaining: int


class Me(TypedDict):
    plan: Literal['enthusiast', 'addon']
    #: Scopes granted to the presented key
    scopes: list[str]
    limits: MeLimits
    usage: MeUsage
    availableScopes: list[str]


class CatalogueItem(TypedDict):
    masterItemId: int
    name: str
    slug: str
    category: str
    platform: str
    subCategory: str | None
    modelNumber: str | None
    releaseYear: int | None
    region: str | None
    format: str | None
    developer: str | None
    publisher: str | None
    genre: str | None
    manufacturer: str | None
    description: str | None
    imageUrl: str | None


class Pagination(TypedDict):
    total: int
    limit: int
    offset: int
    #: offset + data.length < total
    hasMore: bool


class CataloguePage(TypedDict):
    """One page of /catalogue."""

    data: list[CatalogueItem]
    pagination: Pagination


class PriceRow(TypedDict):
    masterItemId: int
    name: str
    slug: str
    platform: str
    category: str
    #: Barcode digits
    upc: str
    loose: float | None
    cib: float | None
    new: float | None
    boxOnly: float | None
    manualOnly: float | None
    #: UTC, ISO 8601 with milliseconds
    scrapeDate: str


class PricesPage(TypedDict):
    """One page of /prices."""

    data: list[PriceRow]
    pagination: Pagination


class CollectionItem(TypedDict):
    id: int
    masterItemId: int
    name: str
    category: str
    condition: Literal['LOOSE', 'CIB', 'NEW', 'BOX_ONLY', 'MANUAL_ONLY']
    status: Literal['OWNED', 'WISHLIST', 'SOLD']
    platform: str
    releaseYear: int | None
    #: Current price at the item's condition in US dollars; 0 where unknown
    estimatedValue: float
    #: US dollars
    purchasePrice: float
    #: UTC, ISO 8601 with milliseconds
    acquiredAt: str
    #: User-defined label
    location: str
    isFavorite: bool
    #: UTC, ISO 8601 with milliseconds
    createdAt: str
    #: UTC, ISO 8601 with milliseconds
    updatedAt: str


class CollectionPage(TypedDict):
    """One page of /collection."""

    data: list[CollectionItem]
    pagination: Pagination


class CollectionValue(TypedDict):
    #: Count of OWNED items
    ownedItems: int
    #: Sum of their estimated values in US dollars, rounded to cents
    estimatedValue: float


class Listing(TypedDict):
    id: int
    #: Public handle of the listing, `pub_<token>`
    publicToken: str
    masterItemId: int
    title: str
    category: str
    condition: Literal['LOOSE', 'CIB', 'NEW', 'BOX_ONLY', 'MANUAL_ONLY']
    status: Literal['ACTIVE', 'RESERVED', 'SOLD', 'CANCELLED']
    #: US dollars
    price: float
    #: Currency code
    currency: str
    acceptsTrade: bool
    #: US dollars
    shippingCost: float
    #: UTC, ISO 8601 with milliseconds
    createdAt: str
    #: UTC, ISO 8601 with milliseconds
    updatedAt: str


class ListingsPage(TypedDict):
    """One page of /listings."""

    data: list[Listing]
    pagination: Pagination


class Offer(TypedDict):
    id: int
    listingId: int
    #: US dollars
    amount: float
    #: One of the offerer's collection items, or null
    tradeItemId: int | None
    #: Text written by the offerer
    message: str
    status: Literal['PENDING', 'ACCEPTED', 'DECLINED', 'WITHDRAWN', 'EXPIRED']
    #: UTC, ISO 8601 with milliseconds
    createdAt: str
    #: UTC, ISO 8601 with milliseconds
    updatedAt: str


class OffersPage(TypedDict):
    """One page of /offers."""

    data: list[Offer]
    pagination: Pagination


class Transaction(TypedDict):
    id: int
    listingId: int
    #: US dollars
    amount: float
    #: US dollars
    platformFee: float
    status: Literal['PAID', 'SHIPPED', 'DELIVERED', 'COMPLETED', 'CANCELLED', 'REFUNDED']
    trackingNumber: str
    shippingCarrier: str
    #: UTC, ISO 8601 with milliseconds
    estimatedDelivery: str
    actualDelivery: str | None
    #: UTC, ISO 8601 with milliseconds
    createdAt: str
    #: UTC, ISO 8601 with milliseconds
    updatedAt: str
    #: The key owner's side
    role: Literal['buyer', 'seller']


class TransactionsPage(TypedDict):
    """One page of /transactions."""

    data: list[Transaction]
    pagination: Pagination
