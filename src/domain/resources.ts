/**
 * The resources of the API, one TypeBox schema each. The schema is the single description of a resource:
 * routes validate and serialize with it and the OpenAPI document is generated from it; the repositories'
 * row types are derived from it (Static), so the query layer cannot drift from what is served.
 */
import { Type, type Static } from 'typebox';

export const Timestamp = Type.String({
  format: 'date-time',
  description: 'UTC, ISO 8601 with milliseconds',
  examples: ['2026-11-20T22:20:37.000Z'],
});
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
export const Money = Type.Number({ description: 'US dollars' });
export const NullableMoney = Type.Union([Type.Number({ description: 'US dollars' }), Type.Null()]);
export const NullableString = Type.Union([Type.String(), Type.Null()]);

export const CatalogueItemSchema = Type.Object(
  {
    masterItemId: Type.Integer(),
    name: Type.String(),
    slug: Type.String(),
    category: Type.String({ examples: ['game'] }),
    platform: Type.String(),
    subCategory: NullableString,
    modelNumber: NullableString,
    releaseYear: Type.Union([Type.Integer(), Type.Null()]),
    region: NullableString,
    format: NullableString,
    developer: NullableString,
    publisher: NullableString,
    genre: NullableString,
    manufacturer: NullableString,
    description: NullableString,
    imageUrl: Type.Union([Type.String({ format: 'uri' }), Type.Null()]),
  },
  { additionalProperties: false },
);
export type CatalogueItem = Static<typeof CatalogueItemSchema>;

export const PriceRowSchema = Type.Object(
  {
    masterItemId: Type.Integer(),
    name: Type.String(),
    slug: Type.String(),
    platform: Type.String(),
    category: Type.String(),
    upc: Type.String({ description: 'Barcode digits' }),
    loose: NullableMoney,
    cib: NullableMoney,
    new: NullableMoney,
    boxOnly: NullableMoney,
    manualOnly: NullableMoney,
    scrapeDate: Timestamp,
  },
  { additionalProperties: false },
);
export type PriceRow = Static<typeof PriceRowSchema>;

export const CollectionItemSchema = Type.Object(
  {
    id: Type.Integer(),
    masterItemId: Type.Integer(),
    name: Type.String(),
    category: Type.String(),
    condition: Type.String({ enum: ['LOOSE', 'CIB', 'NEW', 'BOX_ONLY', 'MANUAL_ONLY'] }),
    status: Type.String({ enum: ['OWNED', 'WISHLIST', 'SOLD'] }),
    platform: Type.String(),
    releaseYear: Type.Union([Type.Integer(), Type.Null()]),
    estimatedValue: Type.Number({ description: "Current price at the item's condition in US dollars; 0 where unknown" }),
    purchasePrice: Money,
    acquiredAt: Timestamp,
    location: Type.String({ description: 'User-defined label' }),
    isFavorite: Type.Boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);
export type CollectionItem = Static<typeof CollectionItemSchema>;

export const CollectionValueSchema = Type.Object(
  {
    ownedItems: Type.Integer({ description: 'Count of OWNED items' }),
    estimatedValue: Type.Number({ description: 'Sum of their estimated values in US dollars, rounded to cents' }),
  },
  { additionalProperties: false },
);
export type CollectionValue = Static<typeof CollectionValueSchema>;

export const ListingSchema = Type.Object(
  {
    id: Type.Integer(),
    publicToken: Type.String({ pattern: '^pub_', description: 'Public handle of the listing, `pub_<token>`' }),
    masterItemId: Type.Integer(),
    title: Type.String(),
    category: Type.String(),
    condition: Type.String({ enum: ['LOOSE', 'CIB', 'NEW', 'BOX_ONLY', 'MANUAL_ONLY'] }),
    status: Type.String({ enum: ['ACTIVE', 'RESERVED', 'SOLD', 'CANCELLED'] }),
    price: Money,
    currency: Type.String({ description: 'Currency code', examples: ['USD'] }),
    acceptsTrade: Type.Boolean(),
    shippingCost: Money,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);
export type Listing = Static<typeof ListingSchema>;

export const OfferSchema = Type.Object(
  {
    id: Type.Integer(),
    listingId: Type.Integer(),
    amount: Money,
    tradeItemId: Type.Union([Type.Integer(), Type.Null()], { description: "One of the offerer's collection items, or null" }),
    message: Type.String({ description: 'Text written by the offerer' }),
    status: Type.String({ enum: ['PENDING', 'ACCEPTED', 'DECLINED', 'WITHDRAWN', 'EXPIRED'] }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);
export type Offer = Static<typeof OfferSchema>;

export const TransactionSchema = Type.Object(
  {
    id: Type.Integer(),
    listingId: Type.Integer(),
    amount: Money,
    platformFee: Money,
    status: Type.String({ enum: ['PAID', 'SHIPPED', 'DELIVERED', 'COMPLETED', 'CANCELLED', 'REFUNDED'] }),
    trackingNumber: Type.String(),
    shippingCarrier: Type.String(),
    estimatedDelivery: Timestamp,
    actualDelivery: NullableTimestamp,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    role: Type.Union([Type.Literal('buyer'), Type.Literal('seller')], { description: "The key owner's side" }),
  },
  { additionalProperties: false },
);
export type Transaction = Static<typeof TransactionSchema>;
