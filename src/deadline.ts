/**
 * One deadline per request (docs/contract.md, "Metering": "503 within 2 seconds"). It starts when the request
 * arrives and covers every step after it together (key lookup, metering, the handler's queries), so the
 * steps cannot each take their own time limit in turn. Deadlines are wall-clock epoch milliseconds
 * (Date.now()): the meters pass them on to Redis and PostgreSQL, which compare them with their own clocks.
 */

/**
 * A request answers by this long after it arrived, 503 if the stores have not answered by then. Well
 * under the contract's 2 seconds: a give-back may add a moment (app.ts), and a busy host delays timers.
 */
export const REQUEST_DEADLINE_MS = 1200;

/** The request's deadline passed before the work it waited for was done. */
export class DeadlineExceededError extends Error {
  constructor(what: string) {
    super(`${what} did not finish before the request's deadline`);
    this.name = 'DeadlineExceededError';
  }
}

/**
 * Settles with `work` if it settles before `deadline`, otherwise rejects at the deadline. Work is never
 * cancelled (a query on the wire cannot be taken back): when it succeeds after the caller was refused,
 * `onLate` receives its result, exactly once, so that the caller can undo what it no longer answers for.
 * A late failure is ignored: the caller has already been told the work did not happen in time.
 */
export function settleBy<T>(deadline: number, work: Promise<T>, what: string, onLate?: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let gaveUp = false;
    const timer = setTimeout(
      () => {
        gaveUp = true;
        reject(new DeadlineExceededError(what));
      },
      Math.max(0, deadline - Date.now()),
    );
    work.then(
      (value) => {
        if (!gaveUp) {
          clearTimeout(timer);
          resolve(value);
        } else onLate?.(value);
      },
      (error: unknown) => {
        if (gaveUp) return;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
