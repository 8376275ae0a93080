/**
 * Aggregator prices: one or two scrapes per item with loose, complete, new, box-only and manual-only
 * points that keep their real order (loose < complete < new). UPCs are a bijection of the id (mostly
 * unique) with a real check digit; a few items share the previous id's barcode, as re-releases do, so a upc
 * filter can match more than one item.
 */
import type { DatasetPrice } from '../domain/dataset.js';
import { core, type Core } from './catalogue-items.js';
import { fmix, rowSeed, SALT_PRICE, type Rng } from './random.js';
import type { Ctx } from './run-context.js';
import { DAY, HOUR, iso, MINUTE, round2 } from './units.js';

const UPC_LEAD = ['0', '0', '0', '7', '8'];

function upcFor(seed: number, id: number): string {
  const h = fmix((Math.imul(id, 0x27d4eb2d) ^ seed) >>> 0);
  if (id > 1 && h % 300 === 0) return upcFor(seed, id - 1);
  const offset = fmix(seed ^ 0x5bd1e995) % 10_000_000_000;
  const body = ((id % 10_000_000_000) * 7919 + offset) % 10_000_000_000;
  const digits = (UPC_LEAD[h % UPC_LEAD.length] as string) + String(body).padStart(10, '0');
  let sum = 0;
  for (let i = 0; i < 11; i++) sum += (digits.charCodeAt(i) - 48) * (i % 2 === 0 ? 3 : 1);
  return digits + String((10 - (sum % 10)) % 10);
}

interface PricePoints {
  loose: number | null;
  cib: number | null;
  new: number | null;
  boxOnly: number | null;
  manualOnly: number | null;
}

function pricePoints(r: Rng, k: Core): PricePoints {
  const def = k.platform.def;
  const retro = k.year < 2005;
  const modern = k.year >= 2013;
  let median: number;
  let sigma: number;
  if (k.category === 'game') {
    median = def.medianLoose.game;
    sigma = 0.8;
  } else if (k.category === 'console') {
    median = def.medianLoose.console;
    sigma = 0.35;
  } else {
    median = Math.max(4, def.medianLoose.game * 0.9);
    sigma = 0.6;
  }
  const loose = Math.max(0.99, round2(median * Math.exp(sigma * r.normal())));
  const cib = Math.max(round2(loose * (retro ? r.between(1.6, 3.2) : r.between(1.15, 1.6))), round2(loose + 0.5));
  const nw = Math.max(round2(cib * (retro ? r.between(2, 5) : r.between(1.1, 1.5))), round2(cib + 1));
  let boxOnly: number | null = null;
  let manualOnly: number | null = null;
  if (k.category === 'game') {
    boxOnly = r.chance(modern ? 0.6 : 0.3) ? null : Math.max(0.99, round2(cib * r.between(0.15, 0.45)));
    manualOnly = r.chance(modern ? 0.9 : 0.35) ? null : Math.max(0.5, round2(cib * r.between(0.06, 0.25)));
  }
  const nullLoose = r.chance(0.03);
  const nullCib = !nullLoose && r.chance(0.06);
  return {
    loose: nullLoose ? null : loose,
    cib: nullCib ? null : cib,
    new: r.chance(retro ? 0.25 : 0.1) ? null : nw,
    boxOnly,
    manualOnly,
  };
}

/** An earlier scrape of the same item: the same market give or take, where a point may since have appeared. */
function earlierPoints(r: Rng, latest: PricePoints): PricePoints {
  const move = (v: number | null, floor: number): number | null =>
    v === null ? null : Math.max(floor, round2(v * r.between(0.8, 1.15)));
  const loose = move(latest.loose, 0.99);
  let cib = move(latest.cib, 0.99);
  if (cib !== null && loose !== null && cib <= loose) cib = round2(loose + 0.5);
  let nw = r.chance(0.3) ? null : move(latest.new, 0.99);
  const below = cib ?? loose;
  if (nw !== null && below !== null && nw <= below) nw = round2(below + 1);
  return {
    loose,
    cib,
    new: nw,
    boxOnly: r.chance(0.3) ? null : move(latest.boxOnly, 0.99),
    manualOnly: move(latest.manualOnly, 0.5),
  };
}

/** All price records of one item, in the order the aggregator delivered them (not necessarily by date). */
export function priceRecords(ctx: Ctx, itemRng: Rng, priceRng: Rng, id: number): DatasetPrice[] {
  const k = core(ctx, itemRng, id);
  const r = priceRng.reset(rowSeed(ctx.seed, id, SALT_PRICE));
  if (k.pin === null && r.chance(0.04)) return [];
  const upc = upcFor(ctx.seed, id);
  const points = pricePoints(r, k);
  const latest: DatasetPrice = { masterItemId: id, upc, ...points, scrapeDate: '' };
  if (!r.chance(0.06)) {
    latest.scrapeDate = iso(ctx.nowMs - r.between(MINUTE, 30 * DAY));
    return [latest];
  }
  latest.scrapeDate = iso(ctx.nowMs - r.between(HOUR, 14 * DAY));
  const older: DatasetPrice = {
    masterItemId: id,
    upc,
    ...earlierPoints(r, points),
    scrapeDate: iso(ctx.nowMs - r.between(15 * DAY, 30 * DAY)),
  };
  return r.chance(0.5) ? [older, latest] : [latest, older];
}

/** The record the API shows: the latest scrape. */
export function latestPrice(records: readonly DatasetPrice[]): DatasetPrice | null {
  let best: DatasetPrice | null = null;
  for (const p of records) if (best === null || p.scrapeDate > best.scrapeDate) best = p;
  return best;
}
