/**
 * Giving back a counted request that ended in a 5xx (docs/contract.md, "Metering"). The answer waits for the
 * give-back until a deadline; when the meter's store does not answer by then (it is down, or stalled, which
 * is often why the request failed), the give-back is tried again in the background until the store is
 * back, so the request is not left counted. Each attempt carries a deadline past which its store does
 * nothing (Meter.refund), so an attempt that was given up on never lands after its retry: given back once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Meter } from './meter.js';

export interface CountedRequest {
  accountId: number;
  keyId: number;
  period: string;
  day: string;
  /** The request's id: the store gives it back once however often the give-back is tried. */
  token: string;
}

const RETRY_EVERY_MS = 1000;
const ATTEMPT_MS = 1000;
/** Past this the request stays counted (over-counted by one at worst, never lost). */
const RETRY_FOR_MS = 10 * 60_000;

/** True when the request was given back by `deadline`; false when that is left to background attempts. */
export async function giveBackCounted(meter: Meter, counted: CountedRequest, deadline: number, log: FastifyBaseLogger): Promise<boolean> {
  try {
    await meter.refund(counted.accountId, counted.keyId, counted.period, counted.day, deadline, counted.token);
    return true;
  } catch (error) {
    log.warn({ err: error }, 'could not give back a counted request yet; retrying in the background');
    void retryInBackground(meter, counted, log);
    return false;
  }
}

async function retryInBackground(meter: Meter, counted: CountedRequest, log: FastifyBaseLogger): Promise<void> {
  const until = Date.now() + RETRY_FOR_MS;
  while (Date.now() < until) {
    // Unreferenced: pending attempts never keep a closing server alive.
    await sleep(RETRY_EVERY_MS, undefined, { ref: false });
    try {
      await meter.refund(counted.accountId, counted.keyId, counted.period, counted.day, Date.now() + ATTEMPT_MS, counted.token);
      log.info('gave back a counted request once the meter answered again');
      return;
    } catch {
      // Still unavailable: next attempt.
    }
  }
  log.warn('gave up giving back a counted request: it stays counted');
}
