/**
 * Admissions whose reply was lost (redis-meter.ts, "A lost reply counts nothing either"): Redis may have run
 * them and counted the request the server answered 503 for. Each is undone, by the admission's own record of
 * what it charged, until Redis answers again, as long as Redis keeps that record (ADMISSIONS_KEPT_S).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ReplyError } from 'ioredis';
import { ADMISSIONS_KEPT_S } from './redis-meter-script.js';

/** The pause between attempts to take back an admission whose reply was lost, while Redis is away. */
const UNDO_RETRY_MS = 500;

/**
 * False when the command surely did not run: Redis answered with an error, or the client never sent it
 * (not connected, and no offline queue). Otherwise (the connection closed or timed out with the command on
 * it) Redis may have run it, and its reply is lost. The message is ioredis 5's (pinned in package.json); were
 * it to change, every failure would be taken for a lost reply, which costs an undo that finds nothing.
 */
export function mayHaveRun(error: unknown): boolean {
  if (error instanceof ReplyError) return false;
  return !(error instanceof Error && error.message.includes('enableOfflineQueue options is false'));
}

export class LostAdmissions {
  /** Admissions whose reply was lost, still to be taken back, and whether a loop is sending them. */
  private readonly lost = new Map<string, { keys: string[]; until: number }>();
  private sendingLost = false;
  private closed = false;

  /** `undo`: takes back one admission, whatever it charged, if Redis ran it (RedisMeter's undo). */
  constructor(private readonly undo: (keys: string[], member: string) => Promise<void>) {}

  /**
   * An admission whose reply was lost: tried until Redis answers again (it restarts from its append-only
   * file, or the network comes back), as long as Redis keeps the admission's record.
   */
  add(keys: string[], member: string): void {
    this.lost.set(member, { keys, until: Date.now() + ADMISSIONS_KEPT_S * 1000 });
    if (!this.sendingLost) void this.sendLost();
  }

  /**
   * One loop for all of them, so that a Redis that is away gets one attempt per pause, not one per request
   * that was in flight: each round sends them in order and stops at the first that fails.
   */
  private async sendLost(): Promise<void> {
    this.sendingLost = true;
    try {
      while (!this.closed && this.lost.size > 0) {
        for (const [member, { keys, until }] of this.lost) {
          if (Date.now() >= until) {
            this.lost.delete(member);
            continue;
          }
          try {
            await this.undo(keys, member);
            this.lost.delete(member);
          } catch {
            break;
          }
        }
        // Redis is still away (or loading its data): next round. Unreferenced: never keeps a closing process alive.
        if (this.lost.size > 0) await sleep(UNDO_RETRY_MS, undefined, { ref: false });
      }
    } finally {
      this.sendingLost = false;
    }
  }

  /** Stops sending: a closed meter's lost admissions stay counted (over-counted at worst). */
  close(): void {
    this.closed = true;
  }
}
