/**
 * At most KEY_IN_FLIGHT requests of one key in progress in this process; the key's other requests wait
 * their turn here, in arrival order, before the pipeline reads a store for them.
 *
 * Why: every request's store work goes through queues every account shares (the PostgreSQL pool's wait
 * queue, the one Redis connection's pipeline, the event loop). A key with 200 requests in flight put 200
 * entries in each ahead of another account's one, and that account waited behind them (the flood scenario,
 * docs/performance.md). Waiting here costs no store work and no connection; a flood is still answered in
 * full, with exactly its limits (the meter decides, as before), only never more than a few at a time.
 *
 * How long a request waits. A key's own queue is not a store outage: while the line moves, its requests
 * wait their turn, however long the line, and the request's deadline (src/deadline.ts) starts when its
 * turn comes. Before that (issue 17): a burst of 300 on a cold, loaded 2-core machine answered 178 of
 * them 503, on healthy stores, only because the line was long. A waiting request is refused (503, nothing
 * read or counted) only when
 *  - the line has not moved for STALLED_MS (since the request arrived or the stores last answered a request
 *    of the key): the key's requests ahead are stuck on a store, so this one would be too; 503 within 2
 *    seconds holds;
 *  - a request of the key ended in a store outage (`release('outage')`: a store error, a connection refused
 *    or reset): every request then waiting is refused at once, rather than each taking its own deadline in
 *    turn behind a dead store;
 *  - it has waited MAX_WAIT_MS: a key sending far more than its server can answer is refused, not queued
 *    without end (memory, and a client that has long given up).
 *
 * A slow machine is not an outage (issue 40). A request whose own deadline passed while the stores still
 * answer (`release('late')`: a loaded host, a slow query) is refused alone: the requests behind it never
 * tried, and keep their chance. Only when the stores answered no request of the key for STALLED_MS does a
 * late end count as the line standing still and refuse those waiting. The place a late request hands on
 * comes with the deadline its new holder had in line (when the gate would have refused it as stalled), not
 * a fresh one: a late end says nothing of the stores' health, so 503 within 2 seconds holds behind a store
 * that froze, too.
 *
 * The gate is keyed by the key as presented (the header's value), before any lookup: guessed keys and
 * requests without a key take the pipeline's cheap refusals and are not gated.
 */
import { DeadlineExceededError, REQUEST_DEADLINE_MS } from '../../deadline.js';

/**
 * Enough to keep a key's own stream of requests busy on every store (one round trip each in flight), and
 * as many as one Redis call or SQLite transaction decides together (ADMISSIONS_PER_CALL): at 8, a single
 * key's admissions went 8 to a transaction, whose own cost (locks, commit) they shared. One key at 50
 * connections, in turns against 8: SQLite 30,948 / 30,696 against 23,744 / 25,903 / 25,033 req/s (a
 * third run at 16 in the slow state, 19,542), request thread 30.6-30.8 against 36.7-39.8 µs; PostgreSQL +
 * Redis 21,684 against 18,086. The flood bench at 16 still answers exactly the quota, no 503, the other
 * account's p95 6.3-22 ms (docs/performance.md).
 */
export const KEY_IN_FLIGHT = 16;
/** A line that has not moved for this long is stuck on a store: its waiting requests answer 503. */
export const STALLED_MS = REQUEST_DEADLINE_MS;
/** No request waits longer than this for its turn. */
export const MAX_WAIT_MS = 10_000;

/**
 * How a request that held a place ended, as its line sees it: `answered` (the stores answered it, whatever
 * the status), `late` (its own deadline passed, no store failed), `outage` (a store failed: an error, a
 * connection refused or reset), `unused` (it left before any store work).
 */
export type Ending = 'answered' | 'late' | 'outage' | 'unused';

/** Called exactly once when the request is done (later calls do nothing). */
export type Release = (ending?: Ending) => void;

/** A place in the key's line: given back with `release`; the request is answered by `deadline` (epoch ms). */
export interface Turn {
  release: Release;
  deadline: number;
}

/** Why a waiting request was refused: the service is unavailable to it (503), nothing was read or counted. */
export class KeyLineRefusedError extends DeadlineExceededError {
  constructor(readonly reason: 'stalled' | 'outage' | 'too_long') {
    super("the turn among the key's requests");
    this.name = 'KeyLineRefusedError';
    // As the log shows it: why the request left its key's line unserved.
    this.message = `refused in its key's line: ${
      reason === 'stalled' ? 'the line stood still' : reason === 'outage' ? 'a request ahead ended in a store outage' : 'it waited the longest a request may'
    }`;
  }
}

interface Waiter {
  since: number;
  resolve: (turn: Turn) => void;
  reject: (error: KeyLineRefusedError) => void;
}

interface Lane {
  running: number;
  waiting: Waiter[];
  /** When the stores last answered a request of the key, or the line began (epoch ms). */
  answered: number;
  timer: NodeJS.Timeout | null;
}

export class KeyGate {
  readonly #lanes = new Map<string, Lane>();

  constructor(
    private readonly limit = KEY_IN_FLIGHT,
    private readonly stalledMs = STALLED_MS,
    private readonly maxWaitMs = MAX_WAIT_MS,
  ) {}

  /** A release now if the key has a free place, else null. */
  tryEnter(key: string): Release | null {
    let lane = this.#lanes.get(key);
    if (lane === undefined) {
      lane = { running: 0, waiting: [], answered: Date.now(), timer: null };
      this.#lanes.set(key, lane);
    } else if (lane.running >= this.limit) {
      return null;
    }
    lane.running += 1;
    return this.#releaser(key, lane);
  }

  /** Resolves with a turn once one of the key's places is handed on to this request; rejects as the file comment says. */
  wait(key: string): Promise<Turn> {
    const entered = this.tryEnter(key);
    if (entered !== null) return Promise.resolve({ release: entered, deadline: Date.now() + this.stalledMs });
    const lane = this.#lanes.get(key) as Lane;
    return new Promise((resolve, reject) => {
      lane.waiting.push({ since: Date.now(), resolve, reject });
      if (lane.timer === null) this.#schedule(lane);
    });
  }

  /** Keys with a request in progress or waiting (0 when idle: no key is remembered past its requests). */
  get size(): number {
    return this.#lanes.size;
  }

  /** The time a waiter is refused unless the line moves first. Waiters are in arrival order: the front's is the earliest. */
  #dueAt(lane: Lane, waiter: Waiter = lane.waiting[0]!): number {
    return Math.min(Math.max(waiter.since, lane.answered) + this.stalledMs, waiter.since + this.maxWaitMs);
  }

  #schedule(lane: Lane): void {
    lane.timer = setTimeout(() => this.#expire(lane), Math.max(0, this.#dueAt(lane) - Date.now()));
    lane.timer.unref();
  }

  /** Refuses the waiters that are due (a prefix of the line), then waits for the next one's time. */
  #expire(lane: Lane): void {
    lane.timer = null;
    const now = Date.now();
    while (lane.waiting.length > 0 && this.#dueAt(lane) <= now) {
      const waiter = lane.waiting.shift()!;
      waiter.reject(new KeyLineRefusedError(waiter.since + this.maxWaitMs <= now ? 'too_long' : 'stalled'));
    }
    if (lane.waiting.length > 0) this.#schedule(lane);
  }

  #releaser(key: string, lane: Lane): Release {
    let released = false;
    return (ending = 'answered') => {
      if (released) return;
      released = true;
      const now = Date.now();
      if (ending === 'answered') lane.answered = now;
      // A late end when the stores answered none of the key's requests for a whole deadline: the line stands still.
      const stalled = ending === 'late' && now - lane.answered >= this.stalledMs;
      if (ending === 'outage' || stalled) {
        for (const waiter of lane.waiting.splice(0)) waiter.reject(new KeyLineRefusedError(stalled ? 'stalled' : 'outage'));
      }
      const next = lane.waiting.shift();
      if (next !== undefined) {
        // The place passes to the next request in line (`running` is unchanged). Its time at the stores
        // starts afresh only when the stores answered; otherwise it keeps the time it had left in line.
        const deadline = ending === 'answered' ? now + this.stalledMs : Math.min(now + this.stalledMs, this.#dueAt(lane, next));
        return next.resolve({ release: this.#releaser(key, lane), deadline });
      }
      if (lane.timer !== null) {
        clearTimeout(lane.timer);
        lane.timer = null;
      }
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
