/**
 * Catalogue items: games, consoles and accessories of real platforms, each a pure function of (seed, id).
 * `core` draws what prices and account rows need; `buildItem` continues the same stream for the rest.
 */
import type { DatasetCatalogueItem } from '../domain/dataset.js';
import type { CatalogueStatus } from '../domain/values.js';
import { fillCode, JAPAN, REGION_PICK, REGIONS } from './product-codes.js';
import { eraOf, firstPartyOf, publisherInYear } from './publishers.js';
import { orNull, rowSeed, SALT_ITEM, weighted, type Rng } from './random.js';
import { HARDWARE, NAME_PARTS, type ConsoleDef } from './reference-data.js';
import type { Ctx, RunPlatform } from './run-context.js';
import { slugPart } from './slug.js';
import { gameTitle, pinOf, type Pin } from './titles.js';

export type DemoCatalogueItem = DatasetCatalogueItem & { masterItemId: number };

type Category = 'game' | 'console' | 'accessory';

export interface Core {
  id: number;
  pin: Pin | null;
  category: Category;
  platform: RunPlatform;
  status: CatalogueStatus;
  year: number;
  console: ConsoleDef | null;
}

export function core(ctx: Ctx, r: Rng, id: number): Core {
  r.reset(rowSeed(ctx.seed, id, SALT_ITEM));
  const pin = pinOf(id);
  const c = r.next();
  const category: Category = pin !== null || c < 0.86 ? 'game' : c < 0.91 ? 'console' : 'accessory';
  const platform = pin === 'pokemon' ? ctx.pokemonPlatforms.pick(r) : ctx.platforms.pick(r);
  const s = r.next();
  const status: CatalogueStatus = pin !== null || s < 0.95 ? 'PUBLISHED' : s < 0.98 ? 'DRAFT' : 'ARCHIVED';
  const from = pin === 'pokemon' ? Math.max(platform.def.from, 1996) : platform.def.from;
  let year = r.intBetween(from, platform.to);
  let consoleDef: ConsoleDef | null = null;
  if (category === 'console') {
    consoleDef = r.pick(platform.def.consoles);
    year = Math.min(Math.max(consoleDef.year, platform.def.from), platform.to);
  }
  return { id, pin, category, platform, status, year, console: consoleDef };
}

/** The fields that depend on what kind of item it is. */
type KindFields = Pick<DatasetCatalogueItem, 'name' | 'subCategory' | 'modelNumber' | 'developer' | 'publisher'
  | 'genre' | 'format' | 'manufacturer' | 'description'>;

const GENRES = weighted(NAME_PARTS.genres);

function gameFields(r: Rng, k: Core, region: number): KindFields {
  const p = k.platform;
  const def = p.def;
  const title = gameTitle(r, k.pin, p, k.year);
  const era = eraOf(k.year);
  const firstParty = firstPartyOf(def.family);
  let pub: string;
  if (title.series !== null) pub = title.series.publisher;
  else if (def.publishers !== undefined) pub = r.pick(def.publishers);
  else if (firstParty !== null && r.chance(0.2)) pub = firstParty;
  else pub = r.pick(p.eraPublishers[era] as readonly string[]);
  pub = publisherInYear(pub, k.year);
  const dev = r.chance(title.series !== null ? 0.7 : 0.4) ? pub
    : r.pick(def.publishers ?? (p.eraDevelopers[era] as readonly string[]));
  const publisher = orNull(r, 0.02, pub);
  const developer = orNull(r, 0.04, dev);
  const genre = orNull(r, 0.03, title.series !== null ? title.series.genre : GENRES.pick(r));
  const format = orNull(r, 0.03, r.pick(def.formats));
  const manufacturer = orNull(r, 0.05, def.maker);
  const sc = r.next();
  const subCategory = sc < 0.35 ? null : sc < 0.8 ? 'Standard Edition'
    : sc < 0.9 && def.budgetLabel !== undefined ? def.budgetLabel
    : sc < 0.95 ? 'Limited Edition' : "Collector's Edition";
  const modelNumber = p.code !== null && r.chance(0.8) ? fillCode(p.code, r, region) : null;
  let description: string | null;
  if (r.chance(0.06) && k.pin === null) description = null;
  else {
    const by = developer !== null && publisher !== null ? `, developed by ${developer} and published by ${publisher}`
      : publisher !== null ? `, published by ${publisher}` : '';
    const extra = region === JAPAN && r.chance(0.5) ? 'Japanese release; text is in Japanese.'
      : r.pick(NAME_PARTS.gameBlurbs);
    description = `${genre ?? 'Game'} title for the ${def.name}${by} (${k.year}). ${extra}`;
  }
  return { name: title.name, subCategory, modelNumber, developer, publisher, genre, format, manufacturer, description };
}

function consoleFields(r: Rng, k: Core): KindFields {
  const p = k.platform;
  const def = p.def;
  const cd = k.console as ConsoleDef;
  const product = cd.model === null || r.chance(0.5) ? cd.name : `${cd.name} (${cd.model})`;
  const v = r.next();
  let bundle: string | null = null;
  if (v < 0.15 && p.series.length > 0) {
    const f = r.pick(p.series);
    if (f.family === def.family && f.since <= k.year) bundle = `${f.name} Bundle`;
  }
  const name = bundle !== null ? `${product} - ${bundle}`
    : v < 0.45 ? `${product} - ${r.pick(HARDWARE.consoleColours)}` : product;
  return {
    name,
    subCategory: bundle !== null ? 'Bundle' : def.handheld ? 'Handheld Console' : 'Home Console',
    modelNumber: cd.model,
    developer: orNull(r, 0.1, def.maker),
    publisher: orNull(r, 0.1, def.maker),
    manufacturer: def.maker,
    genre: null,
    format: null,
    description: orNull(r, 0.06,
      `${cd.name} by ${def.maker}, released in ${k.year}. ${r.pick(HARDWARE.consoleNotes)}`),
  };
}

/** An official accessory, or a third-party one from a brand that existed by then (which may move its year). */
function accessoryFields(r: Rng, k: Core): KindFields {
  const p = k.platform;
  const def = p.def;
  const none = { genre: null, format: null, developer: null };
  if (def.accessories.length > 0 && r.chance(0.55)) {
    const a = r.pick(def.accessories);
    return {
      ...none,
      name: `${def.name} ${a.name}`,
      subCategory: a.subCategory,
      modelNumber: a.model,
      manufacturer: def.maker,
      publisher: orNull(r, 0.2, def.maker),
      description: orNull(r, 0.08, `Official ${def.maker} ${a.name} for the ${def.name}.`),
    };
  }
  const brands = HARDWARE.accessoryBrands;
  let brand = r.pick(brands);
  if (brand.since > p.to) brand = brands[1] as (typeof brands)[number];
  const kind = r.pick(def.handheld ? HARDWARE.handheldAccessoryKinds : HARDWARE.homeAccessoryKinds);
  const name = r.chance(0.5) ? `${brand.name} ${kind.kind} for ${def.name}` : `${brand.name} ${def.name} ${kind.kind}`;
  const modelNumber = r.chance(0.5) ? `${brand.modelPrefix}${r.intBetween(1000, 9999)}` : null;
  const publisher = orNull(r, 0.5, brand.name);
  const lo = Math.max(def.from, brand.since);
  if (lo <= p.to) k.year = r.intBetween(lo, p.to);
  return {
    ...none,
    name,
    subCategory: kind.subCategory,
    modelNumber,
    manufacturer: brand.name,
    publisher,
    description: orNull(r, 0.15, `Third-party ${kind.kind} made by ${brand.name} for the ${def.name}.`),
  };
}

export function buildItem(ctx: Ctx, r: Rng, id: number): DemoCatalogueItem {
  const k = core(ctx, r, id);
  const p = k.platform;
  const region = REGION_PICK.pick(r);
  const pinned = k.pin !== null;
  const fields = k.category === 'game' ? gameFields(r, k, region)
    : k.category === 'console' ? consoleFields(r, k) : accessoryFields(r, k);

  return {
    masterItemId: id,
    name: fields.name,
    slug: `${slugPart(fields.name)}-${p.slug}-${id}`,
    category: k.category,
    platform: p.def.name,
    status: k.status,
    subCategory: fields.subCategory,
    modelNumber: fields.modelNumber,
    releaseYear: !pinned && r.chance(0.01) ? null : k.year,
    region: r.chance(k.category === 'accessory' ? 0.3 : 0.02) ? null : REGIONS[region],
    format: fields.format,
    developer: fields.developer,
    publisher: fields.publisher,
    genre: fields.genre,
    manufacturer: fields.manufacturer,
    description: fields.description,
    imageUrl: !pinned && r.chance(0.05) ? null : `https://images.shelfapi.dev/items/${id}.jpg`,
  };
}
