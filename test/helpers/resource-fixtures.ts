/**
 * Datasets and reference answers for the HTTP tests of the resource endpoints (catalogue, prices, CSV
 * export). The expected answers are computed here from the dataset itself, independently of the product's
 * queries, so a test compares what the API says with what the contract (docs/contract.md, "Parameters",
 * "Responses" and "Values and data rules") says it must.
 */
import type { LightMyRequestResponse } from 'fastify';
import type { Dataset, DatasetCatalogueItem, DatasetPrice } from '../../src/domain/dataset.js';
import { fixture } from './fixture.js';

// ---------------------------------------------------------------------------------------------------
// Response shapes (as the spec describes them)

export interface CatalogueItemBody {
  masterItemId: number;
  name: string;
  slug: string;
  category: string;
  platform: string;
  subCategory: string | null;
  modelNumber: string | null;
  releaseYear: number | null;
  region: string | null;
  format: string | null;
  developer: string | null;
  publisher: string | null;
  genre: string | null;
  manufacturer: string | null;
  description: string | null;
  imageUrl: string | null;
}

export interface PriceRowBody {
  masterItemId: number;
  name: string;
  slug: string;
  platform: string;
  category: string;
  upc: string;
  loose: number | null;
  cib: number | null;
  new: number | null;
  boxOnly: number | null;
  manualOnly: number | null;
  scrapeDate: string;
}

export interface Pagination {
  total: number;
  limit: number;
  offset: number;
  hasMore: boolean;
}

export interface ListBody<T> {
  data: T[];
  pagination: Pagination;
}

export interface DataBody<T> {
  data: T;
}

export interface ErrorBodyShape {
  error: string;
  message: string;
}

/** The parsed JSON body, typed by the caller (the shape is then checked by the assertions). */
export function body<T>(res: LightMyRequestResponse): T {
  return res.json() as T;
}

/** Keys of a catalogue item, in the spec's order. */
export const CATALOGUE_KEYS = [
  'masterItemId', 'name', 'slug', 'category', 'platform', 'subCategory', 'modelNumber', 'releaseYear', 'region',
  'format', 'developer', 'publisher', 'genre', 'manufacturer', 'description', 'imageUrl',
] as const;

/** Keys of a price row, in the spec's (and the CSV's) order. */
export const PRICE_KEYS = [
  'masterItemId', 'name', 'slug', 'platform', 'category', 'upc', 'loose', 'cib', 'new', 'boxOnly', 'manualOnly', 'scrapeDate',
] as const;

// ---------------------------------------------------------------------------------------------------
// The dataset

/** A name holding every character that forces CSV quoting: `,` `"` CR and LF. */
export const AWKWARD_NAME = 'Line\r\nBreak, "Quoted"\nEdition\rEnd';
export const AWKWARD_PLATFORM = 'Neo "Geo", AES';

function item(masterItemId: number, name: string, extra: Partial<DatasetCatalogueItem> = {}): DatasetCatalogueItem {
  return {
    masterItemId,
    name,
    slug: `item-${masterItemId}`,
    category: 'game',
    platform: 'PC',
    status: 'PUBLISHED',
    ...extra,
  };
}

function price(masterItemId: number, upc: string, scrapeDate: string, points: Partial<DatasetPrice> = {}): DatasetPrice {
  return { masterItemId, upc, scrapeDate, ...points };
}

/**
 * The shared fixture (accounts, keys, items 1..10) plus items 11..26 chosen for the filters:
 * - 11 has `\` in its name, 21 and 8 have `%`, 8 and 19 have `_`, 20 is 19 with `a` for `_`;
 * - 12 is Pokémon in upper case, 18 has a decomposed (NFD) accent, 9 (fixture) a composed one;
 * - 13 is on `PlayStation 2` (not `PlayStation`) and has only the required fields;
 * - 14's category `Game Accessory` contains `game`; 18 has a non-ASCII platform and every field set;
 * - 15 and 16 have two price records with different UPCs (15 newest listed first, 16 oldest first);
 * - 17 is a DRAFT and 6 (fixture, ARCHIVED) gets a price: their UPCs match nothing;
 * - 22 and 23 share a latest UPC that 24 had before its latest record;
 * - 25's price record has no price point at all; 26 has `,` `"` CR LF in its name and platform.
 */
export function resourceDataset(): Dataset {
  const base = fixture();
  const catalogue: DatasetCatalogueItem[] = [
    ...(base.catalogue ?? []),
    item(11, 'Back\\Slash Game', { platform: 'PlayStation' }),
    item(12, 'POKÉMON Puzzle League', { platform: 'Nintendo 64', releaseYear: 2001 }),
    item(13, 'Crash Bandicoot', { platform: 'PlayStation 2' }),
    item(14, 'Controller Pak', { platform: 'Nintendo 64', category: 'Game Accessory', manufacturer: 'Nintendo' }),
    item(15, 'Two Price Game', { releaseYear: 2005 }),
    item(16, 'Another Two Price', { releaseYear: 2006 }),
    item(17, 'Draft With Upc', { status: 'DRAFT' }),
    item(18, 'Ame\u0301lie Adventure', {
      platform: 'Übersystem',
      category: 'Spiel',
      subCategory: 'Collector',
      modelNumber: 'UB-18',
      releaseYear: 2010,
      region: 'PAL',
      format: 'Disc',
      developer: 'Studio Ü',
      publisher: 'Ü Publishing',
      genre: 'Adventure',
      manufacturer: 'Übermaker',
      description: 'Every field set.',
      imageUrl: 'https://images.example.com/18.jpg',
    }),
    item(19, 'X_y Game'),
    item(20, 'Xay Game'),
    item(21, '50% Off Bundle'),
    item(22, 'Shared Upc A'),
    item(23, 'Shared Upc B'),
    item(24, 'Former Upc Holder'),
    item(25, 'No Points Known'),
    item(26, AWKWARD_NAME, { platform: AWKWARD_PLATFORM }),
  ];
  const prices: DatasetPrice[] = [
    ...(base.prices ?? []),
    price(6, '666666666666', '2026-11-01T00:00:00.000Z', { loose: 1 }),
    price(11, '111111000011', '2026-11-01T00:00:00.000Z', { loose: 11, cib: 11.5 }),
    price(12, '120000000012', '2026-11-02T00:00:00.000Z', { loose: 12.25, new: 80 }),
    price(13, '130000000013', '2026-11-03T00:00:00.000Z', { cib: 13 }),
    // 15: the newest record comes first in the file: "latest" is by scrapeDate, not by order of arrival.
    price(15, '222222222222', '2026-11-01T00:00:00.000Z', { loose: 15, cib: 150 }),
    price(15, '111111111111', '2026-10-01T00:00:00.000Z', { loose: 1.5, cib: 1.5 }),
    price(16, '444444444444', '2026-09-01T00:00:00.000Z', { loose: 4 }),
    price(16, '555555555555', '2026-11-05T00:00:00.000Z', { loose: 16, manualOnly: 1.6 }),
    price(17, '333333333333', '2026-11-01T00:00:00.000Z', { loose: 17 }),
    price(18, '180000000018', '2026-11-04T00:00:00.000Z', { loose: 18, cib: 18.18, new: 180, boxOnly: 1.8, manualOnly: 0.18 }),
    price(19, '190000000019', '2026-11-05T00:00:00.000Z', { loose: 0 }),
    price(21, '210000000021', '2026-11-06T00:00:00.000Z', { new: 21 }),
    price(22, '777777777777', '2026-11-07T00:00:00.000Z', { loose: 22 }),
    price(23, '777777777777', '2026-11-08T00:00:00.000Z', { loose: 23 }),
    price(24, '777777777777', '2026-10-07T00:00:00.000Z', { loose: 2.4 }),
    price(24, '888888888888', '2026-11-07T00:00:00.000Z', { loose: 24 }),
    price(25, '250000000025', '2026-11-09T00:00:00.000Z'),
    price(26, '260000000026', '2026-11-10T00:00:00.000Z', { loose: 26.5, cib: null, new: 260 }),
  ];
  return { ...base, catalogue, prices };
}

// ---------------------------------------------------------------------------------------------------
// Reference answers

export function publishedItems(dataset: Dataset): DatasetCatalogueItem[] {
  return (dataset.catalogue ?? [])
    .filter((i) => i.status === 'PUBLISHED')
    .sort((a, b) => (a.masterItemId ?? 0) - (b.masterItemId ?? 0));
}

/** What /catalogue answers for an item: every field of the spec, null where the dataset has none. */
export function expectedCatalogueItem(i: DatasetCatalogueItem): CatalogueItemBody {
  return {
    masterItemId: i.masterItemId!,
    name: i.name,
    slug: i.slug,
    category: i.category,
    platform: i.platform,
    subCategory: i.subCategory ?? null,
    modelNumber: i.modelNumber ?? null,
    releaseYear: i.releaseYear ?? null,
    region: i.region ?? null,
    format: i.format ?? null,
    developer: i.developer ?? null,
    publisher: i.publisher ?? null,
    genre: i.genre ?? null,
    manufacturer: i.manufacturer ?? null,
    description: i.description ?? null,
    imageUrl: i.imageUrl ?? null,
  };
}

/** The latest price record of each item by scrapeDate (whatever the order in the file). */
export function latestPrices(dataset: Dataset): Map<number, DatasetPrice> {
  const latest = new Map<number, DatasetPrice>();
  for (const p of dataset.prices ?? []) {
    const current = latest.get(p.masterItemId);
    if (current === undefined || Date.parse(p.scrapeDate) > Date.parse(current.scrapeDate)) latest.set(p.masterItemId, p);
  }
  return latest;
}

/** What /prices answers: one row per published item with a price record, ascending masterItemId. */
export function expectedPriceRows(dataset: Dataset): PriceRowBody[] {
  const latest = latestPrices(dataset);
  const rows: PriceRowBody[] = [];
  for (const i of publishedItems(dataset)) {
    const p = latest.get(i.masterItemId!);
    if (p === undefined) continue;
    rows.push({
      masterItemId: i.masterItemId!,
      name: i.name,
      slug: i.slug,
      platform: i.platform,
      category: i.category,
      upc: p.upc,
      loose: p.loose ?? null,
      cib: p.cib ?? null,
      new: p.new ?? null,
      boxOnly: p.boxOnly ?? null,
      manualOnly: p.manualOnly ?? null,
      scrapeDate: new Date(p.scrapeDate).toISOString(),
    });
  }
  return rows;
}

/**
 * Folding for the reference search, written independently of src/store/search-text.ts: canonical
 * decomposition, combining diacritics (U+0300..U+036F) dropped, lower case. Enough for the names used here.
 */
function fold(text: string): string {
  return text.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase();
}

export interface ReferenceFilters {
  search?: string;
  platform?: string;
  category?: string;
  upc?: string;
}

/**
 * Whether an item matches the filters as docs/contract.md, "Parameters", states them: every search term contained
 * in the name (case and accents ignored, no wildcard), platform and category equal ignoring case, UPC equal
 * to the one of the latest price record.
 */
export function referenceMatch(
  i: { name: string; platform: string; category: string },
  latestUpc: string | undefined,
  f: ReferenceFilters,
): boolean {
  if (f.search !== undefined) {
    const name = fold(i.name);
    const terms = f.search.split(/\p{White_Space}+/u).filter((t) => t !== '').map(fold);
    if (!terms.every((t) => name.includes(t))) return false;
  }
  if (f.platform !== undefined && i.platform.toLowerCase() !== f.platform.toLowerCase()) return false;
  if (f.category !== undefined && i.category.toLowerCase() !== f.category.toLowerCase()) return false;
  if (f.upc !== undefined && latestUpc !== f.upc) return false;
  return true;
}

export function expectedCatalogueIds(dataset: Dataset, f: ReferenceFilters): number[] {
  const latest = latestPrices(dataset);
  return publishedItems(dataset)
    .filter((i) => referenceMatch(i, latest.get(i.masterItemId!)?.upc, f))
    .map((i) => i.masterItemId!);
}

export function expectedPriceIds(dataset: Dataset, f: Omit<ReferenceFilters, 'category'>): number[] {
  return expectedPriceRows(dataset)
    .filter((r) => referenceMatch(r, r.upc, f))
    .map((r) => r.masterItemId);
}

/** A query string of the filters (and paging), each value percent-encoded. */
export function queryString(params: Record<string, string | number | undefined>): string {
  const parts = Object.entries(params)
    .filter((e): e is [string, string | number] => e[1] !== undefined)
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

/**
 * Search values for the cross-check against the reference: 1-, 2- and 3+-character terms (they take
 * different paths on SQLite: FTS5 trigram narrowing only applies to 3+), mixes of them, case and accent
 * variants, and the LIKE metacharacters `%`, `_`, `\` alone and inside longer terms.
 */
export const SEARCH_CASES: readonly string[] = [
  'pokemon', 'POKÉMON', 'Poke\u0301mon', 'pokémon snap', 'cafe', 'CAFÉ', 'café racer', 'amelie', 'AMÉLIE', 'Amélie',
  'zelda time', 'time zelda', 'zelda mario', 'ocarina of', 'zelda zelda', '  zelda  ',
  '%', '50%', '100%', '%o', '% o', '0%', '_', '_x', '_y', 'x_y', 'x_', 'n_x', '\\', '\\s', 'k\\s', 'back\\slash',
  '"deluxe"', 'deluxe"', '"', ',', 'complete,',
  'sn', 'SN', 'po', '64', 'ma', 'é', 'z', 'x', 'q', 'a', '4',
  'pokemon sn', 'zelda o', 'mario 6', 'po 64', 'x a', 'game x', 'game _', 'game %', 'upc b', 'two price', 'pr tw',
  'nintendo', 'the', 'no', 'zzz', 'zz', 'qq q',
  'line', 'break, "quoted"', 'edition', 'end',
];
