/**
 * `shelfapi load` and `seed`: writes a dataset (decisions.md section 7) in one transaction. Every row is
 * checked as it is read, against the file and the store; the first bad row refuses the whole dataset with
 * a message naming its section and row, and the transaction is rolled back, so nothing of it is written.
 */
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { SCOPES, isScope } from '../domain/scopes.js';
import {
  CATALOGUE_STATUSES,
  COLLECTION_STATUSES,
  CONDITIONS,
  LISTING_STATUSES,
  OFFER_STATUSES,
  TRANSACTION_STATUSES,
} from '../domain/values.js';
import { assertEmailFree, emailProblem } from '../services/accounts.service.js';
import { InputError } from '../services/input-error.js';
import { validateKeyName } from '../services/keys.service.js';
import { generateKey, hashKey, lastFour } from '../keys/api-key.js';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { withWriteTransaction } from '../store/write-transaction.js';
import { bumpDataVersion } from '../store/read-cache.js';
import { ANALYZE_AFTER_ROWS, refreshStatistics } from '../store/analyze.js';
import { foldText } from '../store/search-text.js';
import { bulkInserter, catalogueBulk, refreshCurrentPrices, type BulkInserter, type Row } from './bulk-insert.js';
import { sectionFraction, sectionSize, silentProgress, step, type ProgressSink } from './progress.js';
import {
  boolean,
  canonicalTimestamp,
  checkFields,
  currency,
  id,
  isString,
  money,
  nonEmptyString,
  nullable,
  oneOf,
  optional,
  required,
  timestamp,
  upc,
  year,
  type FieldSpec,
} from './field-checks.js';

export class DatasetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatasetError';
  }
}

/** Runs a rule of the services (shared with the CLI and the settings screen), naming the row when it refuses. */
async function operatorRule<T>(where: string, rule: () => Promise<T>): Promise<T> {
  try {
    return await rule();
  } catch (error) {
    if (error instanceof InputError) throw new DatasetError(`${where}: ${error.message}`);
    throw error;
  }
}

/** A dataset whose big sections may be lazy iterables (the demo generator), or plain parsed JSON. */
export interface DatasetInput {
  accounts?: unknown;
  keys?: unknown;
  catalogue?: unknown;
  prices?: unknown;
  collection?: unknown;
  listings?: unknown;
  offers?: unknown;
  transactions?: unknown;
}

export interface LoadResult {
  accounts: Record<string, number>;
  keys: Record<string, string>;
  counts: Record<string, number>;
}

export interface LoadOptions {
  keyPrefix: string;
  now: number;
  /**
   * Told when each section present in the input starts and ends, and every batch (or every
   * PROGRESS_EVERY rows of a small section) in between, for a progress display.
   */
  progress?: ProgressSink;
}

const SECTIONS = ['accounts', 'keys', 'catalogue', 'prices', 'collection', 'listings', 'offers', 'transactions'] as const;
const BATCH = 5000;
/** Small sections are checked row by row (a query each): told every this many rows, not every row. */
const PROGRESS_EVERY = 1000;

/**
 * Fields the service derives (section 7): a file may carry them, as they are fields of the resource, but
 * they are only type-checked and never stored: the service computes them from the catalogue and prices.
 */
const DERIVED = {
  collection: {
    name: optional(isString),
    category: optional(isString),
    platform: optional(isString),
    releaseYear: optional(nullable(year)),
    estimatedValue: optional(money),
  },
  listings: { category: optional(isString) },
  transactions: { role: optional(oneOf(['buyer', 'seller'])) },
};

const FIELDS: Record<(typeof SECTIONS)[number], Record<string, FieldSpec>> = {
  accounts: {
    ref: required(nonEmptyString),
    email: required((v) => (typeof v === 'string' ? emailProblem(v) : 'must be an email address')),
    plan: required(oneOf(['enthusiast', 'addon', 'none'])),
    planStatus: optional(oneOf(['active', 'lapsed'])),
  },
  keys: {
    ref: required(nonEmptyString),
    account: required(nonEmptyString),
    name: required(isString),
    scopes: required((v) =>
      Array.isArray(v) && v.every((s) => typeof s === 'string' && isScope(s))
        ? null
        : `must be a list of scopes from ${SCOPES.join(', ')}`,
    ),
    expiresAt: optional(nullable(timestamp)),
    revoked: optional(boolean),
  },
  catalogue: {
    masterItemId: optional(id),
    name: required(nonEmptyString),
    slug: required(nonEmptyString),
    category: required(nonEmptyString),
    platform: required(nonEmptyString),
    status: required(oneOf(CATALOGUE_STATUSES)),
    subCategory: optional(nullable(isString)),
    modelNumber: optional(nullable(isString)),
    releaseYear: optional(nullable(year)),
    region: optional(nullable(isString)),
    format: optional(nullable(isString)),
    developer: optional(nullable(isString)),
    publisher: optional(nullable(isString)),
    genre: optional(nullable(isString)),
    manufacturer: optional(nullable(isString)),
    description: optional(nullable(isString)),
    imageUrl: optional(nullable((v) => (typeof v === 'string' && /^https?:\/\/\S+$/.test(v) ? null : 'must be an http(s) URL'))),
  },
  prices: {
    masterItemId: required(id),
    upc: required(upc),
    loose: optional(nullable(money)),
    cib: optional(nullable(money)),
    new: optional(nullable(money)),
    boxOnly: optional(nullable(money)),
    manualOnly: optional(nullable(money)),
    scrapeDate: required(timestamp),
  },
  collection: {
    id: optional(id),
    account: required(nonEmptyString),
    masterItemId: required(id),
    condition: required(oneOf(CONDITIONS)),
    status: required(oneOf(COLLECTION_STATUSES)),
    purchasePrice: required(money),
    acquiredAt: required(timestamp),
    location: required(isString),
    isFavorite: required(boolean),
    createdAt: optional(timestamp),
    updatedAt: optional(timestamp),
    ...DERIVED.collection,
  },
  listings: {
    id: optional(id),
    account: required(nonEmptyString),
    masterItemId: required(id),
    title: required(nonEmptyString),
    condition: required(oneOf(CONDITIONS)),
    status: required(oneOf(LISTING_STATUSES)),
    price: required(money),
    currency: required(currency),
    acceptsTrade: required(boolean),
    shippingCost: required(money),
    ...DERIVED.listings,
    publicToken: optional((v) => (typeof v === 'string' && /^pub_[0-9A-Za-z_-]{4,64}$/.test(v) ? null : 'must look like pub_<token>')),
    createdAt: optional(timestamp),
    updatedAt: optional(timestamp),
  },
  offers: {
    id: optional(id),
    account: required(nonEmptyString),
    listingId: required(id),
    amount: required(money),
    tradeItemId: optional(nullable(id)),
    message: required(isString),
    status: required(oneOf(OFFER_STATUSES)),
    createdAt: optional(timestamp),
    updatedAt: optional(timestamp),
  },
  transactions: {
    id: optional(id),
    buyer: required(nonEmptyString),
    seller: required(nonEmptyString),
    listingId: required(id),
    amount: required(money),
    platformFee: required(money),
    status: required(oneOf(TRANSACTION_STATUSES)),
    trackingNumber: required(isString),
    shippingCarrier: required(nonEmptyString),
    estimatedDelivery: required(timestamp),
    actualDelivery: optional(nullable(timestamp)),
    createdAt: optional(timestamp),
    updatedAt: optional(timestamp),
    ...DERIVED.transactions,
  },
};

type Obj = Record<string, unknown>;
const ts = (v: unknown): string => canonicalTimestamp(v as string) as string;
const tsOr = (v: unknown, fallback: string): string => (v === undefined ? fallback : ts(v));
const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

function rowsOf(section: string, value: unknown): Iterable<unknown> {
  if (value === undefined) return [];
  if (typeof value === 'object' && value !== null && Symbol.iterator in value && typeof value !== 'string') {
    return value as Iterable<unknown>;
  }
  throw new DatasetError(`${section}: must be a list`);
}

/** Ids of one table: those in the store, those taken by the file so far, and the next free one. */
class IdSpace {
  private readonly taken = new Set<number>();
  constructor(
    private next: number,
    private readonly existsInStore: (ids: number[]) => Promise<Set<number>>,
  ) {}
  static async open(db: Kysely<Database>, table: 'catalogue_items' | 'collection_items' | 'listings' | 'offers' | 'transactions', column: string, declared: number[]) {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- table and column are fixed strings of this module
    const anyDb = db as Kysely<any>;
    const row = (await anyDb.selectFrom(table).select((eb) => eb.fn.max(column).as('max')).executeTakeFirst()) as { max: number | null } | undefined;
    // A loop, not Math.max(...declared): spreading more than ~125,000 ids overflows the call stack
    // ("Maximum call stack size exceeded"), which refused any large catalogue that gives its ids.
    let largest = Number(row?.max ?? 0);
    for (const value of declared) if (value > largest) largest = value;
    const next = largest + 1;
    return new IdSpace(next, async (ids) => {
      const found = new Set<number>();
      for (let i = 0; i < ids.length; i += 500) {
        const rows = (await anyDb.selectFrom(table).select(column).where(column, 'in', ids.slice(i, i + 500)).execute()) as Obj[];
        for (const r of rows) found.add(Number(r[column]));
      }
      return found;
    });
  }
  /** Takes a declared id or assigns the next free one; throws the reason when the id is in use. */
  async take(declared: unknown, where: string): Promise<number> {
    if (declared === undefined) {
      while (this.taken.has(this.next)) this.next++;
      const assigned = this.next++;
      this.taken.add(assigned);
      return assigned;
    }
    const value = declared as number;
    if (this.taken.has(value)) throw new DatasetError(`${where}: id ${value} appears twice in the file`);
    this.taken.add(value);
    return value;
  }
  /** take(), refusing an id that a row of the store already has. */
  async takeNew(declared: unknown, where: string): Promise<number> {
    const id = await this.take(declared, where);
    if ((await this.existsInStore([id])).size > 0) throw new DatasetError(`${where}: id ${id} already exists in the store`);
    return id;
  }
  hasInFile(value: number): boolean {
    return this.taken.has(value);
  }
  async conflictsWithStore(ids: number[]): Promise<Set<number>> {
    return this.existsInStore(ids);
  }
}

function declaredIds(value: unknown, field: string): number[] {
  if (!Array.isArray(value)) return [];
  const out: number[] = [];
  for (const row of value) {
    const v = (row as Obj | null)?.[field];
    if (typeof v === 'number' && Number.isSafeInteger(v)) out.push(v);
  }
  return out;
}

export async function loadDataset(store: Store, input: DatasetInput, options: LoadOptions): Promise<LoadResult> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new DatasetError('the dataset must be a JSON object with sections accounts, keys, catalogue, prices, collection, listings, offers, transactions');
  }
  for (const section of Object.keys(input)) {
    if (!(SECTIONS as readonly string[]).includes(section)) {
      throw new DatasetError(`unknown section '${section}' (sections: ${SECTIONS.join(', ')})`);
    }
  }
  const nowIso = new Date(options.now).toISOString();
  const progress = options.progress ?? silentProgress;
  // Only the sections the input has: an empty display line for every absent section would be noise.
  const begin = (section: (typeof SECTIONS)[number]) => {
    if (input[section] !== undefined) progress.start(section, sectionSize(input[section]));
  };
  const finish = (section: (typeof SECTIONS)[number], rows: number) => {
    if (input[section] !== undefined) progress.end(rows);
  };
  const tick = (rows: number) => {
    if (rows % PROGRESS_EVERY === 0) progress.update(rows);
  };

  const result = await withWriteTransaction(store, async (trx) => {
    const out: LoadResult = { accounts: {}, keys: {}, counts: {} };
    const bulk: BulkInserter = bulkInserter(store, trx);
    const accountIds = new Map<string, number>();

    const check = (section: (typeof SECTIONS)[number], row: unknown, n: number): Obj => {
      const problem = checkFields(row, FIELDS[section]);
      if (problem !== null) throw new DatasetError(`${section} row ${n}: ${problem}`);
      return row as Obj;
    };
    const accountRef = (section: string, n: number, field: string, ref: unknown): number => {
      const found = accountIds.get(ref as string);
      if (found === undefined) throw new DatasetError(`${section} row ${n}: ${field} '${String(ref)}' is not an account of this file`);
      return found;
    };

    // Accounts
    let n = 0;
    begin('accounts');
    for (const raw of rowsOf('accounts', input.accounts)) {
      const row = check('accounts', raw, ++n);
      tick(n);
      if (accountIds.has(row.ref as string)) throw new DatasetError(`accounts row ${n}: ref '${String(row.ref)}' appears twice`);
      if (row.plan === 'none' && row.planStatus !== undefined) {
        throw new DatasetError(`accounts row ${n}: planStatus must not be given with plan 'none'`);
      }
      // Rows of this file are in the transaction already: a second row with the same email is found too.
      await operatorRule(`accounts row ${n}`, () => assertEmailFree(trx, store.dialect, row.email as string));
      const inserted = await trx
        .insertInto('accounts')
        .values({
          email: row.email as string,
          plan: row.plan as string,
          plan_status: row.plan === 'none' ? null : ((row.planStatus as string | undefined) ?? 'active'),
          created_at: nowIso,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
        .catch((err: unknown) => {
          throw new DatasetError(`accounts row ${n}: ${String((err as Error).message)}`);
        });
      accountIds.set(row.ref as string, inserted.id);
      out.accounts[row.ref as string] = inserted.id;
    }
    out.counts.accounts = n;
    finish('accounts', n);

    // Keys
    n = 0;
    const keyRefs = new Set<string>();
    begin('keys');
    for (const raw of rowsOf('keys', input.keys)) {
      const row = check('keys', raw, ++n);
      tick(n);
      if (keyRefs.has(row.ref as string)) throw new DatasetError(`keys row ${n}: ref '${String(row.ref)}' appears twice`);
      keyRefs.add(row.ref as string);
      const accountId = accountRef('keys', n, 'account', row.account);
      const name = await operatorRule(`keys row ${n}`, async () => validateKeyName(row.name as string));
      const key = generateKey(options.keyPrefix);
      await trx
        .insertInto('api_keys')
        .values({
          account_id: accountId,
          name,
          key_hash: hashKey(key),
          last_four: lastFour(key),
          scopes: [...new Set(row.scopes as string[])].join(' '),
          created_at: nowIso,
          expires_at: row.expiresAt == null ? null : ts(row.expiresAt),
          revoked_at: row.revoked === true ? nowIso : null,
        })
        .execute();
      out.keys[row.ref as string] = key;
    }
    out.counts.keys = n;
    finish('keys', n);

    // Catalogue
    const items = await IdSpace.open(trx, 'catalogue_items', 'master_item_id', declaredIds(input.catalogue, 'masterItemId'));
    const itemExists = async (ids: number[]): Promise<Set<number>> => {
      const fromStore = await items.conflictsWithStore(ids.filter((i) => !items.hasInFile(i)));
      return new Set(ids.filter((i) => items.hasInFile(i) || fromStore.has(i)));
    };
    const requireItem = async (masterItemId: number, where: string) => {
      if (!(await itemExists([masterItemId])).has(masterItemId)) {
        throw new DatasetError(`${where}: masterItemId ${masterItemId} is not in the catalogue`);
      }
    };
    n = 0;
    let batch: Row[] = [];
    let batchFirstRow = 1;
    const catalogue = catalogueBulk(store, bulk, trx);
    const catalogueFraction = sectionFraction(input.catalogue);
    const flushCatalogue = async () => {
      if (batch.length === 0) return;
      const clash = await items.conflictsWithStore(batch.map((r) => r.master_item_id as number));
      if (clash.size > 0) {
        const index = batch.findIndex((r) => clash.has(r.master_item_id as number));
        throw new DatasetError(`catalogue row ${batchFirstRow + index}: masterItemId ${String(batch[index]?.master_item_id)} already exists in the store`);
      }
      await catalogue.insert(batch);
      progress.update(n, catalogueFraction?.());
      batch = [];
      batchFirstRow = n + 1;
    };
    begin('catalogue');
    for (const raw of rowsOf('catalogue', input.catalogue)) {
      const row = check('catalogue', raw, ++n);
      const masterItemId = await items.take(row.masterItemId, `catalogue row ${n}`);
      batch.push({
        master_item_id: masterItemId,
        name: row.name as string,
        slug: row.slug as string,
        category: row.category as string,
        platform: row.platform as string,
        status: row.status as string,
        sub_category: orNull(row.subCategory as string | undefined),
        model_number: orNull(row.modelNumber as string | undefined),
        release_year: orNull(row.releaseYear as number | undefined),
        region: orNull(row.region as string | undefined),
        format: orNull(row.format as string | undefined),
        developer: orNull(row.developer as string | undefined),
        publisher: orNull(row.publisher as string | undefined),
        genre: orNull(row.genre as string | undefined),
        manufacturer: orNull(row.manufacturer as string | undefined),
        description: orNull(row.description as string | undefined),
        image_url: orNull(row.imageUrl as string | undefined),
        search_name: foldText(row.name as string),
        platform_key: (row.platform as string).toLowerCase(),
        category_key: (row.category as string).toLowerCase(),
      });
      if (batch.length >= BATCH) await flushCatalogue();
    }
    await flushCatalogue();
    out.counts.catalogue = n;
    finish('catalogue', n);
    await catalogue.finish(progress);

    // Prices
    n = 0;
    const priced = new Set<number>();
    const seenRecords = new Set<string>();
    batchFirstRow = 1;
    const pricesFraction = sectionFraction(input.prices);
    const flushPrices = async () => {
      if (batch.length === 0) return;
      const ids = [...new Set(batch.map((r) => r.master_item_id as number))];
      const known = await itemExists(ids);
      const missing = batch.findIndex((r) => !known.has(r.master_item_id as number));
      if (missing >= 0) {
        throw new DatasetError(`prices row ${batchFirstRow + missing}: masterItemId ${String(batch[missing]?.master_item_id)} is not in the catalogue`);
      }
      const existing = await trx
        .selectFrom('price_records')
        .select(['master_item_id', 'scrape_date'])
        .where('master_item_id', 'in', ids)
        .execute();
      const clash = new Set(existing.map((r) => `${r.master_item_id}@${r.scrape_date}`));
      const dup = batch.findIndex((r) => clash.has(`${String(r.master_item_id)}@${String(r.scrape_date)}`));
      if (dup >= 0) throw new DatasetError(`prices row ${batchFirstRow + dup}: a price record for this masterItemId and scrapeDate already exists`);
      await bulk.insert('price_records', batch);
      for (const i of ids) priced.add(i);
      progress.update(n, pricesFraction?.());
      batch = [];
      batchFirstRow = n + 1;
    };
    begin('prices');
    for (const raw of rowsOf('prices', input.prices)) {
      const row = check('prices', raw, ++n);
      const scrapeDate = ts(row.scrapeDate);
      const recordKey = `${String(row.masterItemId)}@${scrapeDate}`;
      if (seenRecords.has(recordKey)) throw new DatasetError(`prices row ${n}: masterItemId ${String(row.masterItemId)} has two records for ${scrapeDate}`);
      seenRecords.add(recordKey);
      batch.push({
        master_item_id: row.masterItemId as number,
        upc: row.upc as string,
        loose: orNull(row.loose as number | undefined),
        cib: orNull(row.cib as number | undefined),
        new: orNull(row.new as number | undefined),
        box_only: orNull(row.boxOnly as number | undefined),
        manual_only: orNull(row.manualOnly as number | undefined),
        scrape_date: scrapeDate,
      });
      if (batch.length >= BATCH) await flushPrices();
    }
    await flushPrices();
    seenRecords.clear();
    out.counts.prices = n;
    finish('prices', n);
    if (input.prices !== undefined) {
      // Its own section: on a large load this takes seconds, and a bar left at 100% looks stuck.
      progress.start('current prices', priced.size);
      await refreshCurrentPrices(trx, [...priced], (done) => progress.update(done));
      progress.end(priced.size);
    }

    // Collection, listings, offers, transactions: small sections, checked row by row.
    const collection = await IdSpace.open(trx, 'collection_items', 'id', declaredIds(input.collection, 'id'));
    const collectionOwner = new Map<number, number>();
    n = 0;
    const collectionRows: Row[] = [];
    begin('collection');
    for (const raw of rowsOf('collection', input.collection)) {
      const row = check('collection', raw, ++n);
      tick(n);
      const where = `collection row ${n}`;
      const accountId = accountRef('collection', n, 'account', row.account);
      await requireItem(row.masterItemId as number, where);
      const rowId = await collection.takeNew(row.id, where);
      collectionOwner.set(rowId, accountId);
      collectionRows.push({
        id: rowId,
        account_id: accountId,
        master_item_id: row.masterItemId as number,
        condition: row.condition as string,
        status: row.status as string,
        purchase_price: row.purchasePrice as number,
        acquired_at: ts(row.acquiredAt),
        location: row.location as string,
        is_favorite: row.isFavorite === true ? 1 : 0,
        created_at: tsOr(row.createdAt, nowIso),
        updated_at: tsOr(row.updatedAt, nowIso),
      });
    }
    await bulk.insert('collection_items', collectionRows);
    out.counts.collection = n;
    finish('collection', n);

    const listings = await IdSpace.open(trx, 'listings', 'id', declaredIds(input.listings, 'id'));
    const listingOwner = new Map<number, number>();
    const tokens = new Set<string>();
    n = 0;
    const listingRows: Row[] = [];
    begin('listings');
    for (const raw of rowsOf('listings', input.listings)) {
      const row = check('listings', raw, ++n);
      tick(n);
      const where = `listings row ${n}`;
      const accountId = accountRef('listings', n, 'account', row.account);
      await requireItem(row.masterItemId as number, where);
      const rowId = await listings.takeNew(row.id, where);
      const token = (row.publicToken as string | undefined) ?? `pub_${randomBytes(12).toString('base64url')}`;
      const tokenTaken =
        tokens.has(token) || (await trx.selectFrom('listings').select('id').where('public_token', '=', token).executeTakeFirst()) !== undefined;
      if (tokenTaken) throw new DatasetError(`${where}: publicToken ${token} is already used`);
      tokens.add(token);
      listingOwner.set(rowId, accountId);
      listingRows.push({
        id: rowId,
        account_id: accountId,
        public_token: token,
        master_item_id: row.masterItemId as number,
        title: row.title as string,
        condition: row.condition as string,
        status: row.status as string,
        price: row.price as number,
        currency: row.currency as string,
        accepts_trade: row.acceptsTrade === true ? 1 : 0,
        shipping_cost: row.shippingCost as number,
        created_at: tsOr(row.createdAt, nowIso),
        updated_at: tsOr(row.updatedAt, nowIso),
      });
    }
    await bulk.insert('listings', listingRows);
    out.counts.listings = n;
    finish('listings', n);

    const ownerOf = async (map: Map<number, number>, table: 'listings' | 'collection_items', rowId: number): Promise<number | undefined> => {
      const inFile = map.get(rowId);
      if (inFile !== undefined) return inFile;
      const row = await trx.selectFrom(table).select('account_id').where('id', '=', rowId).executeTakeFirst();
      return row?.account_id;
    };

    const offers = await IdSpace.open(trx, 'offers', 'id', declaredIds(input.offers, 'id'));
    n = 0;
    const offerRows: Row[] = [];
    begin('offers');
    for (const raw of rowsOf('offers', input.offers)) {
      const row = check('offers', raw, ++n);
      tick(n);
      const where = `offers row ${n}`;
      const accountId = accountRef('offers', n, 'account', row.account);
      const seller = await ownerOf(listingOwner, 'listings', row.listingId as number);
      if (seller === undefined) throw new DatasetError(`${where}: listingId ${String(row.listingId)} does not exist`);
      if (seller === accountId) throw new DatasetError(`${where}: an account cannot make an offer on its own listing`);
      const tradeItemId = orNull(row.tradeItemId as number | null | undefined);
      if (tradeItemId !== null) {
        const owner = await ownerOf(collectionOwner, 'collection_items', tradeItemId);
        if (owner === undefined) throw new DatasetError(`${where}: tradeItemId ${tradeItemId} does not exist`);
        if (owner !== accountId) throw new DatasetError(`${where}: tradeItemId ${tradeItemId} is not a collection item of the offerer`);
      }
      const rowId = await offers.takeNew(row.id, where);
      offerRows.push({
        id: rowId,
        account_id: accountId,
        listing_id: row.listingId as number,
        amount: row.amount as number,
        trade_item_id: tradeItemId,
        message: row.message as string,
        status: row.status as string,
        created_at: tsOr(row.createdAt, nowIso),
        updated_at: tsOr(row.updatedAt, nowIso),
      });
    }
    await bulk.insert('offers', offerRows);
    out.counts.offers = n;
    finish('offers', n);

    const transactions = await IdSpace.open(trx, 'transactions', 'id', declaredIds(input.transactions, 'id'));
    n = 0;
    const transactionRows: Row[] = [];
    begin('transactions');
    for (const raw of rowsOf('transactions', input.transactions)) {
      const row = check('transactions', raw, ++n);
      tick(n);
      const where = `transactions row ${n}`;
      const buyer = accountRef('transactions', n, 'buyer', row.buyer);
      const seller = accountRef('transactions', n, 'seller', row.seller);
      if (buyer === seller) throw new DatasetError(`${where}: buyer and seller must be different accounts`);
      const listingSeller = await ownerOf(listingOwner, 'listings', row.listingId as number);
      if (listingSeller === undefined) throw new DatasetError(`${where}: listingId ${String(row.listingId)} does not exist`);
      if (listingSeller !== seller) throw new DatasetError(`${where}: listing ${String(row.listingId)} is not the seller's`);
      const rowId = await transactions.takeNew(row.id, where);
      transactionRows.push({
        id: rowId,
        buyer_account_id: buyer,
        seller_account_id: seller,
        listing_id: row.listingId as number,
        amount: row.amount as number,
        platform_fee: row.platformFee as number,
        status: row.status as string,
        tracking_number: row.trackingNumber as string,
        shipping_carrier: row.shippingCarrier as string,
        estimated_delivery: ts(row.estimatedDelivery),
        actual_delivery: row.actualDelivery == null ? null : ts(row.actualDelivery),
        created_at: tsOr(row.createdAt, nowIso),
        updated_at: tsOr(row.updatedAt, nowIso),
      });
    }
    await bulk.insert('transactions', transactionRows);
    out.counts.transactions = n;
    finish('transactions', n);
    await bumpDataVersion(trx);
    return out;
  });
  if ((result.counts.catalogue ?? 0) + (result.counts.prices ?? 0) + (result.counts.collection ?? 0) >= ANALYZE_AFTER_ROWS) {
    await step(progress, 'statistics', () => refreshStatistics(store));
  }
  return result;
}
