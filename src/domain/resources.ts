/**
 * The resources of the API, one TypeBox schema each. The schema is the single description of a resource:
 * routes validate and serialize with it and the OpenAPI document is generated from it; the repositories'
 * row types are derived from it (Static), so the query layer cannot drift from what is served.
 */
import { Type, type Static, type TProperties } from 'typebox';
import { COLLECTION_STATUSES, CONDITIONS, LISTING_STATUSES, OFFER_STATUSES, TRANSACTION_STATUSES } from './values.js';

/** A resource's object is closed: exactly these fields, as the OpenAPI document and the client's types state. */
function resource<P extends TProperties>(properties: P) {
  return Type.Object(properties, { additionalProperties: false });
}

export const Timestamp = Type.String({
  format: 'date-time',
  description: 'UTC, ISO 8601 with milliseconds',
  examples: ['2026-11-20T22:20:37.000Z'],
});
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
export const Money = Type.Number({ description: 'US dollars' });
export const NullableMoney = Type.Union([Money, Type.Null()]);
export const NullableString = Type.Union([Type.String(), Type.Null()]);
/** When a record of the collection or the marketplace was made and last changed (both fields, in this order). */
const RECORD_TIMES = { createdAt: Timestamp, updatedAt: Timestamp };

export const CatalogueItemSchema = resource({
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
});
export type CatalogueItem = Static<typeof CatalogueItemSchema>;

export const PriceRowSchema = resource({
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
});
export type PriceRow = Static<typeof PriceRowSchema>;

export const CollectionItemSchema = resource({
  id: Type.Integer(),
  masterItemId: Type.Integer(),
  name: Type.String(),
  category: Type.String(),
  condition: Type.String({ enum: [...CONDITIONS] }),
  status: Type.String({ enum: [...COLLECTION_STATUSES] }),
  platform: Type.String(),
  releaseYear: Type.Union([Type.Integer(), Type.Null()]),
  estimatedValue: Type.Number({ description: "Current price at the item's condition in US dollars; 0 where unknown" }),
  purchasePrice: Money,
  acquiredAt: Timestamp,
  location: Type.String({ description: 'User-defined label' }),
  isFavorite: Type.Boolean(),
  ...RECORD_TIMES,
});
export type CollectionItem = Static<typeof CollectionItemSchema>;

export const CollectionValueSchema = resource({
  ownedItems: Type.Integer({ description: 'Count of OWNED items' }),
  estimatedValue: Type.Number({ description: 'Sum of their estimated values in US dollars, rounded to cents' }),
});
export type CollectionValue = Static<typeof CollectionValueSchema>;

export const ListingSchema = resource({
  id: Type.Integer(),
  publicToken: Type.String({ pattern: '^pub_', description: 'Public handle of the listing, `pub_<token>`' }),
  masterItemId: Type.Integer(),
  title: Type.String(),
  category: Type.String(),
  condition: Type.String({ enum: [...CONDITIONS] }),
  status: Type.String({ enum: [...LISTING_STATUSES] }),
  price: Money,
  currency: Type.String({ description: 'Currency code', examples: ['USD'] }),
  acceptsTrade: Type.Boolean(),
  shippingCost: Money,
  ...RECORD_TIMES,
});
export type Listing = Static<typeof ListingSchema>;

export const OfferSchema = resource({
  id: Type.Integer(),
  listingId: Type.Integer(),
  amount: Money,
  tradeItemId: Type.Union([Type.Integer(), Type.Null()], { description: "One of the offerer's collection items, or null" }),
  message: Type.String({ description: 'Text written by the offerer' }),
  status: Type.String({ enum: [...OFFER_STATUSES] }),
  ...RECORD_TIMES,
});
export type Offer = Static<typeof OfferSchema>;

export const TransactionSchema = resource({
  id: Type.Integer(),
  listingId: Type.Integer(),
  amount: Money,
  platformFee: Money,
  status: Type.String({ enum: [...TRANSACTION_STATUSES] }),
  trackingNumber: Type.String(),
  shippingCarrier: Type.String(),
  estimatedDelivery: Timestamp,
  actualDelivery: NullableTimestamp,
  ...RECORD_TIMES,
  role: Type.Union([Type.Literal('buyer'), Type.Literal('seller')], { description: "The key owner's side" }),
});
export type Transaction = Static<typeof TransactionSchema>;
