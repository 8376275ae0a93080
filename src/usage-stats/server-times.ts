/**
 * Server time in the usage buckets (usage-buckets.ts): a histogram per key and period, one field per bucket,
 * from which the owner's screen reads p50 / p95 / p99.
 *
 * `s:<i>` (written now): log-spaced buckets, 4 to a doubling of time (each bound 2^(1/4) ≈ 1.19 times the
 * one before, ~13 a decade) from 1/16 ms to 65.5 s. A percentile is read as the geometric middle of its
 * bucket, so it is within 2^(1/8) - 1 ≈ 9% of every time the bucket holds: inside the 25% the screen
 * promises from 1 ms to 10 s, with room for the rank falling between two requests. Finer would cost more
 * fields per period for no visible gain ("42 ms" is shown to 2 figures); coarser (2 a doubling, ≤ 19%)
 * leaves too little room. A request still adds one field: the write costs what it did.
 *
 * `t:<i>` (written before): 22 fixed buckets of SERVER_TIME_BOUNDS_MS. Periods stored then are still read,
 * and their percentiles shown as before: at most the bucket's upper bound.
 */

/** Upper bounds of the old buckets (`t:<i>`), in ms; the last bucket holds everything slower. Read only. */
export const SERVER_TIME_BOUNDS_MS = [0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 2000, 5000] as const;

/** The fine buckets: bucket 0 is under FINE_MIN_MS, bucket i (1..FINE_STEPS) is [min·2^((i-1)/4), min·2^(i/4)), the last everything slower. */
export const FINE_MIN_MS = 1 / 16;
export const STEPS_PER_DOUBLING = 4;
const FINE_STEPS = 20 * STEPS_PER_DOUBLING;
export const FINE_TOP_MS = FINE_MIN_MS * 2 ** (FINE_STEPS / STEPS_PER_DOUBLING);
const FINE_COUNT = FINE_STEPS + 2;
const OLD_COUNT = SERVER_TIME_BOUNDS_MS.length + 1;

export const FINE_TIME_FIELDS: readonly string[] = Array.from({ length: FINE_COUNT }, (_, i) => `s:${i}`);

/** The fine bucket of a duration: one log2 and a floor, no search. */
export function fineTimeBucket(ms: number): number {
  if (!(ms >= FINE_MIN_MS)) return 0;
  return Math.min(FINE_COUNT - 1, Math.floor(STEPS_PER_DOUBLING * Math.log2(ms / FINE_MIN_MS)) + 1);
}

/** A period's (or a range's) server times: fine bucket counts, and old ones for periods stored before. */
export interface TimeHistogram {
  fine: number[];
  old: number[];
}

export function emptyHistogram(): TimeHistogram {
  return { fine: new Array<number>(FINE_COUNT).fill(0), old: new Array<number>(OLD_COUNT).fill(0) };
}

/** Adds `h` into `into` (a range's histogram from its periods'). */
export function addHistogram(into: TimeHistogram, h: TimeHistogram): TimeHistogram {
  h.fine.forEach((n, i) => (into.fine[i]! += n));
  h.old.forEach((n, i) => (into.old[i]! += n));
  return into;
}

/** The server-time counts out of a period's fields (`s:` and `t:`; the others are not looked at). */
export function histogramOf(fields: ReadonlyMap<string, number> | undefined, into: TimeHistogram = emptyHistogram()): TimeHistogram {
  if (fields === undefined) return into;
  for (const [field, n] of fields) {
    const into_ = field.startsWith('s:') ? into.fine : field.startsWith('t:') ? into.old : undefined;
    if (into_ === undefined) continue;
    const i = Number(field.slice(2));
    if (Number.isInteger(i) && i >= 0 && i < into_.length) into_[i]! += n;
  }
  return into;
}

/**
 * A percentile as the screen shows it: `about` ms (a fine bucket's middle), `at_most` ms (an old bucket's
 * upper bound), or `over` ms (slower than the last bucket's bound).
 */
export interface Percentile {
  ms: number;
  kind: 'about' | 'at_most' | 'over';
}

/** Every bucket, old and fine, in the order of the times they hold (old buckets by their bound): built once. */
const ORDER: ReadonlyArray<{ fine: boolean; i: number; at: number; value: Percentile }> = [
  ...SERVER_TIME_BOUNDS_MS.map((bound, i) => ({ fine: false, i, at: bound, value: { ms: bound, kind: 'at_most' as const } })),
  { fine: false, i: OLD_COUNT - 1, at: Infinity, value: { ms: SERVER_TIME_BOUNDS_MS[OLD_COUNT - 2]!, kind: 'over' as const } },
  ...Array.from({ length: FINE_COUNT - 1 }, (_, i) => {
    const middle = i === 0 ? FINE_MIN_MS / 2 : FINE_MIN_MS * 2 ** ((i - 0.5) / STEPS_PER_DOUBLING);
    return { fine: true, i, at: middle, value: { ms: middle, kind: 'about' as const } };
  }),
  { fine: true, i: FINE_COUNT - 1, at: Infinity, value: { ms: FINE_TOP_MS, kind: 'over' as const } },
].sort((a, b) => a.at - b.at);

/** The p-th percentile (0 < p <= 1) of a histogram; null for no requests. */
export function percentileOf(h: TimeHistogram, p: number): Percentile | null {
  const total = h.fine.reduce((a, b) => a + b, 0) + h.old.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (const bucket of ORDER) {
    seen += (bucket.fine ? h.fine : h.old)[bucket.i]!;
    if (seen >= rank) return bucket.value;
  }
  return ORDER[ORDER.length - 1]!.value;
}
