/** What one run of the generator works from: the seed, `now`, and the platforms that exist by then. */
import { allowedOn, ERAS } from './publishers.js';
import { compileCode, type ProductCode } from './product-codes.js';
import { Weighted } from './random.js';
import { PLATFORMS, SERIES, type PlatformDef, type Series } from './reference-data.js';
import { slugPart } from './slug.js';

/** Each platform's real release span, as used for releaseYear (before clamping to `now`). */
export const DEMO_PLATFORM_YEARS: Readonly<Record<string, readonly [number, number]>> = Object.freeze(
  Object.fromEntries(PLATFORMS.map((p) => [p.name, [p.from, p.to] as const])),
);

/** A platform as one run uses it: its span clamped to `now`, its tables filtered for it. */
export interface RunPlatform {
  def: PlatformDef;
  to: number;
  slug: string;
  /** ERAS filtered by allowedOn, same indices */
  eraPublishers: readonly (readonly string[])[];
  eraDevelopers: readonly (readonly string[])[];
  code: ProductCode | null;
  series: readonly Series[];
}

export interface Ctx {
  seed: number;
  nowMs: number;
  nowYear: number;
  platforms: Weighted<RunPlatform>;
  pokemonPlatforms: Weighted<RunPlatform>;
}

/** The catalogue size: ids run 1..items. */
export function checkItems(items: number): void {
  if (!Number.isSafeInteger(items) || items < 1) throw new RangeError(`items must be a positive integer, got ${items}`);
}

export function makeCtx(seed: number, now: Date): Ctx {
  const nowMs = now.getTime();
  if (!Number.isFinite(nowMs)) throw new RangeError('now must be a valid date');
  const nowYear = now.getUTCFullYear();
  const run: RunPlatform[] = [];
  for (const def of PLATFORMS) {
    if (def.from > nowYear) continue;
    const to = Math.min(def.to, nowYear);
    run.push({
      def,
      to,
      slug: slugPart(def.name),
      eraPublishers: ERAS.map((e, i) => e.publishers.filter((n) => allowedOn(n, def.family, i))),
      eraDevelopers: ERAS.map((e, i) => e.developers.filter((n) => allowedOn(n, def.family, i))),
      code: compileCode(def.productCode),
      // Platforms with their own publisher list only get series of those publishers.
      series: SERIES.filter((f) => (f.family === null || f.family === def.family) && f.since <= to
        && (def.publishers === undefined || def.publishers.includes(f.publisher))),
    });
  }
  if (run.length === 0) throw new RangeError('now is earlier than every platform in the demo catalogue');
  const pokemon = run.filter((p) => p.def.family === 'nintendo' && p.to >= 1996 && p.def.name !== 'Virtual Boy');
  const pokemonPool = pokemon.length > 0 ? pokemon : run;
  return {
    seed,
    nowMs,
    nowYear,
    platforms: new Weighted(run, run.map((p) => p.def.weight)),
    pokemonPlatforms: new Weighted(pokemonPool, pokemonPool.map((p) => p.def.weight)),
  };
}
