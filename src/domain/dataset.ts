/**
 * The dataset file of `shelfapi load` (docs/contract.md, "Operator command line"): one TypeBox schema per kind of row, the
 * single description of it. The loader checks untrusted rows with these schemas and words its errors from
 * them (src/load/dataset-rows.ts), and derives the columns it writes; the demo generator produces values
 * of the types derived here (Static).
 *
 * Each field's schema carries annotations the loader reads (FieldNotes): `expected`, the phrase a refused
 * row names ("field 'upc' must be 6 to 14 ASCII digits"), and how the value is stored.
 */
import { Type, type Static, type TObject, type TSchema, type TSchemaOptions } from 'typebox';
import { isEmailAddress } from './email.js';
import { PLANS, SCOPES } from './scopes.js';
import { canonicalTimestamp } from './timestamps.js';
import {
  CATALOGUE_STATUSES,
  COLLECTION_STATUSES,
  CONDITIONS,
  LISTING_STATUSES,
  OFFER_STATUSES,
  TRANSACTION_STATUSES,
} from './values.js';

/** What the loader reads from a field's schema, besides the schema itself. */
export interface FieldNotes {
  /** Why a value is refused, as a phrase: "must be ...". */
  expected: string;
  /** Stored in canonical form (UTC, milliseconds). */
  timestamp?: true;
  /** When the row leaves the field out, the load's time is stored. */
  defaultsToNow?: true;
  /** An account's ref in the file, stored as that account's id in this column. */
  accountColumn?: string;
  /**
   * A field the service derives from the catalogue and prices ("Operator command line"): a file may carry it, as it is a
   * field of the resource, but it is only type-checked and never stored.
   */
  derived?: true;
}

export function notesOf(schema: TSchema): FieldNotes {
  const { expected, timestamp, defaultsToNow, accountColumn, derived } = schema as unknown as FieldNotes;
  return {
    expected,
    ...(timestamp ? { timestamp } : {}),
    ...(defaultsToNow ? { defaultsToNow } : {}),
    ...(accountColumn === undefined ? {} : { accountColumn }),
    ...(derived ? { derived } : {}),
  };
}

/** Notes besides the phrase, which each kind of field words itself. */
type MoreNotes = Omit<FieldNotes, 'expected'>;
const noted = (expected: string, more: MoreNotes = {}): TSchemaOptions => ({ expected, ...more });

const text = (more?: MoreNotes) => Type.String(noted('must be a string', more));
// \S: the same characters String.prototype.trim removes, so "   " is empty.
const nonEmptyText = (more?: MoreNotes) => Type.String({ pattern: '\\S', ...noted('must be a non-empty string', more) });
const flag = () => Type.Boolean(noted('must be true or false'));
const id = () => Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, ...noted(`must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}`) });
const money = (more?: MoreNotes) => Type.Number({ minimum: 0, ...noted('must be a number >= 0', more) });
const year = () => Type.Integer({ minimum: 1000, maximum: 9999, ...noted('must be a four-digit year') });
const pattern = (regex: string, expected: string) => Type.String({ pattern: regex, ...noted(expected) });
const timestamp = (more?: MoreNotes) =>
  Type.Refine(
    Type.String(noted('must be an ISO 8601 date-time such as 2026-11-01T00:00:00.000Z', { timestamp: true, ...more })),
    (value) => canonicalTimestamp(value) !== null,
  );
const email = () => Type.Refine(Type.String(noted('must be an email address')), isEmailAddress);
const scopes = () => Type.Array(Type.Enum(SCOPES), noted(`must be a list of scopes from ${SCOPES.join(', ')}`));

function oneOf<const Values extends string[]>(values: readonly [...Values], more?: MoreNotes) {
  return Type.Enum(values, noted(`must be one of ${values.join(', ')}`, more));
}

/** The schema, or null; refused with the schema's own phrase. */
function nullable<T extends TSchema>(schema: T, more?: MoreNotes) {
  return Type.Union([schema, Type.Null()], { ...notesOf(schema), ...more });
}

/** A ref to an account of this file, stored as the account's id in `column`. */
const accountRef = (column: string) => nonEmptyText({ accountColumn: column });
const derived = { derived: true } as const;
/** The id of a row an account owns (given, or the next free one) and the account's ref. */
const owned = () => ({ id: Type.Optional(id()), account: accountRef('account_id') });
const stamps = () => ({ createdAt: Type.Optional(timestamp({ defaultsToNow: true })), updatedAt: Type.Optional(timestamp({ defaultsToNow: true })) });
const strict = { additionalProperties: false } as const;

export const DatasetAccountSchema = Type.Object(
  {
    ref: nonEmptyText(),
    email: email(),
    plan: oneOf([...PLANS, 'none']),
    planStatus: Type.Optional(oneOf(['active', 'lapsed'])),
  },
  strict,
);

export const DatasetKeySchema = Type.Object(
  {
    ref: nonEmptyText(),
    account: accountRef('account_id'),
    name: text(),
    scopes: scopes(),
    expiresAt: Type.Optional(nullable(timestamp())),
    revoked: Type.Optional(flag()),
  },
  strict,
);

export const DatasetCatalogueItemSchema = Type.Object(
  {
    masterItemId: Type.Optional(id()),
    name: nonEmptyText(),
    slug: nonEmptyText(),
    category: nonEmptyText(),
    platform: nonEmptyText(),
    status: oneOf(CATALOGUE_STATUSES),
    subCategory: Type.Optional(nullable(text())),
    modelNumber: Type.Optional(nullable(text())),
    releaseYear: Type.Optional(nullable(year())),
    region: Type.Optional(nullable(text())),
    format: Type.Optional(nullable(text())),
    developer: Type.Optional(nullable(text())),
    publisher: Type.Optional(nullable(text())),
    genre: Type.Optional(nullable(text())),
    manufacturer: Type.Optional(nullable(text())),
    description: Type.Optional(nullable(text())),
    imageUrl: Type.Optional(nullable(pattern('^https?://\\S+$', 'must be an http(s) URL'))),
  },
  strict,
);

export const DatasetPriceSchema = Type.Object(
  {
    masterItemId: id(),
    upc: pattern('^[0-9]{6,14}$', 'must be 6 to 14 ASCII digits'),
    loose: Type.Optional(nullable(money())),
    cib: Type.Optional(nullable(money())),
    new: Type.Optional(nullable(money())),
    boxOnly: Type.Optional(nullable(money())),
    manualOnly: Type.Optional(nullable(money())),
    scrapeDate: timestamp(),
  },
  strict,
);

export const DatasetCollectionItemSchema = Type.Object(
  {
    ...owned(),
    masterItemId: id(),
    condition: oneOf(CONDITIONS),
    status: oneOf(COLLECTION_STATUSES),
    purchasePrice: money(),
    acquiredAt: timestamp(),
    location: text(),
    isFavorite: flag(),
    ...stamps(),
    name: Type.Optional(text(derived)),
    category: Type.Optional(text(derived)),
    platform: Type.Optional(text(derived)),
    releaseYear: Type.Optional(nullable(year(), derived)),
    estimatedValue: Type.Optional(money(derived)),
  },
  strict,
);

export const DatasetListingSchema = Type.Object(
  {
    ...owned(),
    masterItemId: id(),
    title: nonEmptyText(),
    condition: oneOf(CONDITIONS),
    status: oneOf(LISTING_STATUSES),
    price: money(),
    currency: pattern('^[A-Z]{3}$', 'must be a three-letter currency code such as USD'),
    acceptsTrade: flag(),
    shippingCost: money(),
    category: Type.Optional(text(derived)),
    publicToken: Type.Optional(pattern('^pub_[0-9A-Za-z_-]{4,64}$', 'must look like pub_<token>')),
    ...stamps(),
  },
  strict,
);

export const DatasetOfferSchema = Type.Object(
  {
    ...owned(),
    listingId: id(),
    amount: money(),
    tradeItemId: Type.Optional(nullable(id())),
    message: text(),
    status: oneOf(OFFER_STATUSES),
    ...stamps(),
  },
  strict,
);

export const DatasetTransactionSchema = Type.Object(
  {
    id: Type.Optional(id()),
    buyer: accountRef('buyer_account_id'),
    seller: accountRef('seller_account_id'),
    listingId: id(),
    amount: money(),
    platformFee: money(),
    status: oneOf(TRANSACTION_STATUSES),
    trackingNumber: text(),
    shippingCarrier: nonEmptyText(),
    estimatedDelivery: timestamp(),
    actualDelivery: Type.Optional(nullable(timestamp())),
    ...stamps(),
    role: Type.Optional(oneOf(['buyer', 'seller'], derived)),
  },
  strict,
);

/** The sections of a dataset file, in the order they are loaded (later sections refer to earlier ones). */
export const DATASET_SECTIONS = {
  accounts: DatasetAccountSchema,
  keys: DatasetKeySchema,
  catalogue: DatasetCatalogueItemSchema,
  prices: DatasetPriceSchema,
  collection: DatasetCollectionItemSchema,
  listings: DatasetListingSchema,
  offers: DatasetOfferSchema,
  transactions: DatasetTransactionSchema,
} as const satisfies Record<string, TObject>;

export type DatasetSection = keyof typeof DATASET_SECTIONS;
export const SECTION_NAMES = Object.keys(DATASET_SECTIONS) as DatasetSection[];

export type DatasetAccount = Static<typeof DatasetAccountSchema>;
export type DatasetKey = Static<typeof DatasetKeySchema>;
export type DatasetCatalogueItem = Static<typeof DatasetCatalogueItemSchema>;
export type DatasetPrice = Static<typeof DatasetPriceSchema>;
export type DatasetCollectionItem = Static<typeof DatasetCollectionItemSchema>;
export type DatasetListing = Static<typeof DatasetListingSchema>;
export type DatasetOffer = Static<typeof DatasetOfferSchema>;
export type DatasetTransaction = Static<typeof DatasetTransactionSchema>;

export type Dataset = { [S in DatasetSection]?: Array<Static<(typeof DATASET_SECTIONS)[S]>> };
