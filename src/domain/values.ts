/** Value sets of the contract (docs/contract.md, "Values and data rules"). */
export const CATALOGUE_STATUSES = ['DRAFT', 'PUBLISHED', 'ARCHIVED'] as const;
export type CatalogueStatus = (typeof CATALOGUE_STATUSES)[number];

/** One condition per price point; the mapping lives in PRICE_POINT_OF_CONDITION. */
export const CONDITIONS = ['LOOSE', 'CIB', 'NEW', 'BOX_ONLY', 'MANUAL_ONLY'] as const;
export type Condition = (typeof CONDITIONS)[number];

export const PRICE_POINT_OF_CONDITION = {
  LOOSE: 'loose',
  CIB: 'cib',
  NEW: 'new',
  BOX_ONLY: 'boxOnly',
  MANUAL_ONLY: 'manualOnly',
} as const satisfies Record<Condition, string>;

export const COLLECTION_STATUSES = ['OWNED', 'WISHLIST', 'SOLD'] as const;
export const LISTING_STATUSES = ['ACTIVE', 'RESERVED', 'SOLD', 'CANCELLED'] as const;
export const OFFER_STATUSES = ['PENDING', 'ACCEPTED', 'DECLINED', 'WITHDRAWN', 'EXPIRED'] as const;
export const TRANSACTION_STATUSES = ['PAID', 'SHIPPED', 'DELIVERED', 'COMPLETED', 'CANCELLED', 'REFUNDED'] as const;
