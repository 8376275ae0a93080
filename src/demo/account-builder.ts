/**
 * What the account rows (collection, listings, offers, transactions) share: one random stream, item
 * look-ups with their latest price, fresh master ids and public tokens, and timestamps kept before `now`.
 */
import type { DatasetPrice } from '../domain/dataset.js';
import { PRICE_POINT_OF_CONDITION, type Condition } from '../domain/values.js';
import { buildItem, core, type Core, type DemoCatalogueItem } from './catalogue-items.js';
import { latestPrice, priceRecords } from './prices.js';
import { Rng, rowSeed, SALT_ACCOUNTS, weighted, type Weighted } from './random.js';
import type { Ctx } from './run-context.js';

export interface ItemInfo {
  core: Core;
  item: DemoCatalogueItem;
  latest: DatasetPrice | null;
}

const GAME_CONDITIONS = weighted<Condition>([['LOOSE', 35], ['CIB', 40], ['NEW', 10], ['BOX_ONLY', 8],
  ['MANUAL_ONLY', 7]]);
const HARDWARE_CONDITIONS = weighted<Condition>([['LOOSE', 55], ['CIB', 35], ['NEW', 10]]);

export const CONDITION_LABEL: Readonly<Record<Condition, string>> = {
  LOOSE: 'Loose',
  CIB: 'Complete in Box',
  NEW: 'New, Sealed',
  BOX_ONLY: 'Box Only',
  MANUAL_ONLY: 'Manual Only',
};

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** About how many collection rows and listings pick a master item; sets when distinct picks are affordable. */
const ACCOUNT_ROWS = 400;

export class AccountBuilder {
  private readonly info = new Map<number, ItemInfo>();
  private readonly itemRng = new Rng(0);
  private readonly priceRng = new Rng(0);
  private readonly usedMasters = new Set<number>();
  private readonly tokens = new Set<string>();
  readonly r: Rng;

  constructor(
    readonly ctx: Ctx,
    private readonly items: number,
  ) {
    this.r = new Rng(rowSeed(ctx.seed, 0, SALT_ACCOUNTS));
  }

  lookup(id: number): ItemInfo {
    let i = this.info.get(id);
    if (i === undefined) {
      const item = buildItem(this.ctx, this.itemRng, id);
      const k = core(this.ctx, this.itemRng, id);
      const latest = latestPrice(priceRecords(this.ctx, this.itemRng, this.priceRng, id));
      i = { core: k, item, latest };
      this.info.set(id, i);
    }
    return i;
  }

  /** Market price of a master item at a condition, as the API would show it (null when unknown). */
  market(id: number, condition: Condition): number | null {
    const i = this.lookup(id);
    if (i.core.status !== 'PUBLISHED' || i.latest === null) return null;
    return i.latest[PRICE_POINT_OF_CONDITION[condition]] ?? null;
  }

  /**
   * Picks a master id satisfying `ok`, preferring ids not used yet; small catalogues run out of fresh ids, so
   * it falls back to repeats and finally to any id at all.
   */
  pickMaster(ok: (i: ItemInfo) => boolean): number {
    const fresh = this.items >= 4 * ACCOUNT_ROWS;
    for (let t = 0; t < 200; t++) {
      const id = 1 + this.r.int(this.items);
      if (fresh && this.usedMasters.has(id)) continue;
      if (ok(this.lookup(id))) {
        this.usedMasters.add(id);
        return id;
      }
    }
    for (let t = 0; t < 200; t++) {
      const id = 1 + this.r.int(this.items);
      if (ok(this.lookup(id))) return id;
    }
    return 1 + this.r.int(this.items);
  }

  conditionFor(id: number, pool?: Weighted<Condition>): Condition {
    if (pool !== undefined) return pool.pick(this.r);
    return this.lookup(id).core.category === 'game' ? GAME_CONDITIONS.pick(this.r) : HARDWARE_CONDITIONS.pick(this.r);
  }

  token(): string {
    for (;;) {
      let t = 'pub_';
      for (let i = 0; i < 22; i++) t += BASE62[this.r.int(62)];
      if (!this.tokens.has(t)) {
        this.tokens.add(t);
        return t;
      }
    }
  }

  /** A time at least one second before `now`. */
  past(ms: number): number {
    return Math.min(Math.floor(ms), this.ctx.nowMs - 1000);
  }
}

/** Numbers rows 1, 2, ... in the order they were created, as the database would have. */
export function assignIds<T extends { createdMs: number }>(rows: T[], setId: (row: T, id: number) => void): void {
  rows.sort((a, b) => a.createdMs - b.createdMs);
  rows.forEach((row, i) => setId(row, i + 1));
}
