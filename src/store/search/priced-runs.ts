/**
 * The rows of a filtered export as runs of the unfiltered export's rows (the priced items, in order): what
 * lets the price guide file (src/export) serve a filtered export by copying byte ranges of itself.
 */
import { count, ordinals, popcount32, type Bitset } from './bitset.js';

export interface PricedRuns {
  /** The unfiltered export's rows, and the masterItemIds of its first and last, to check a file against. */
  priced: PricedSummary;
  /** Matching rows. */
  rows: number;
  /** Each run of consecutive matching rows as [first row, end row), ascending. */
  runs(): Generator<[number, number]>;
}

export interface PricedSummary {
  rows: number;
  firstId: number | null;
  lastId: number | null;
}

/** The priced items' row count and first and last masterItemIds (`ids` by ordinal). */
export function pricedSummary(priced: Bitset, ids: ArrayLike<number>): PricedSummary {
  const rows = count(priced);
  const [first] = ordinals(priced, 0, 1);
  const [last] = ordinals(priced, Math.max(rows - 1, 0), 1);
  return {
    rows,
    firstId: first === undefined ? null : ids[first]!,
    lastId: last === undefined ? null : ids[last]!,
  };
}

/** `matches` (a subset of `priced`, owned by the caller from now on) as runs of the r-th priced item's rows. */
export function pricedRuns(priced: Bitset, matches: Bitset, summary: PricedSummary): PricedRuns {
  return {
    priced: summary,
    rows: count(matches),
    *runs() {
      let row = 0;
      let start = -1;
      for (let w = 0; w < priced.length; w++) {
        const p = priced[w]!;
        if (p === 0) continue;
        // Matches are priced items, so each word of them is a subset of the priced word.
        const m = matches[w]!;
        if (m === p || m === 0) {
          if (m !== 0 && start < 0) start = row;
          else if (m === 0 && start >= 0) {
            yield [start, row];
            start = -1;
          }
          row += popcount32(p);
          continue;
        }
        for (let rest = p; rest !== 0; rest ^= rest & -rest, row++) {
          if ((m & rest & -rest) !== 0) {
            if (start < 0) start = row;
          } else if (start >= 0) {
            yield [start, row];
            start = -1;
          }
        }
      }
      if (start >= 0) yield [start, row];
    },
  };
}
