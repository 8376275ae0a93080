/**
 * At most KEY_IN_FLIGHT requests of one key in progress in this process; the key's other requests wait
 * their turn here, in arrival order, before the pipeline reads a store for them.
 *
 * Why: every request's store work goes through queues every account shares (the PostgreSQL pool's wait
 * queue, the one Redis connection's pipeline, the event loop). A key with 200 requests in flight put 200
 * entries in each ahead of another account's one, and that account waited behind them (the flood scenario,
 * docs/performance.md). Waiting here costs no store work and no connection; a flood is still answered in
 * full, with exactly its limits (the meter decides, as before), only never more than a few at a time.
 * Nothing is refused here: the gate changes when a request is served, never its answer.
 *
 * The gate is keyed by the key as presented (the header's value), before any lookup: guessed keys and
 * requests without a key take the pipeline's cheap refusals and are not gated.
 */

/** Enough to keep a key's own stream of requests busy on every store (one round trip each in flight). */
export const KEY_IN_FLIGHT = 8;

type Release = () => void;

interface Lane {
  running: number;
  waiting: Array<(release: Release) => void>;
}

export class KeyGate {
  readonly #lanes = new Map<string, Lane>();

  constructor(private readonly limit = KEY_IN_FLIGHT) {}

  /** A release (call it exactly once, when the request is done) now if the key has a free place, else null. */
  tryEnter(key: string): Release | null {
    let lane = this.#lanes.get(key);
    if (lane === undefined) {
      lane = { running: 0, waiting: [] };
      this.#lanes.set(key, lane);
    } else if (lane.running >= this.limit) {
      return null;
    }
    lane.running += 1;
    return this.#releaser(key, lane);
  }

  /** Resolves with a release once one of the key's places is handed on to this request. */
  wait(key: string): Promise<Release> {
    const entered = this.tryEnter(key);
    if (entered !== null) return Promise.resolve(entered);
    const lane = this.#lanes.get(key) as Lane;
    return new Promise((resolve) => lane.waiting.push(resolve));
  }

  /** Keys with a request in progress or waiting (0 when idle: no key is remembered past its requests). */
  get size(): number {
    return this.#lanes.size;
  }

  #releaser(key: string, lane: Lane): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = lane.waiting.shift();
      // The place passes to the next request in line: `running` is unchanged.
      if (next !== undefined) return next(this.#releaser(key, lane));
      lane.running -= 1;
      if (lane.running === 0) this.#lanes.delete(key);
    };
  }
}

/** The raw value of the request's first key header, or null when it has none (Node's raw header lines). */
export function gateKeyOf(rawHeaders: readonly string[]): string | null {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (name.length !== 9 && name.length !== 13) continue;
    const lower = name.toLowerCase();
    if (lower === 'x-api-key' || lower === 'authorization') return rawHeaders[i + 1] as string;
  }
  return null;
}
