/**
 * The admissions asked for during one turn of the event loop, sent to Redis together (redis-meter.ts): one
 * call of the admission script runs them one after another, in the order asked, each exactly as it would run
 * alone, and each caller gets its own answer. A call holds at most ADMISSIONS_PER_CALL admissions: a full one
 * leaves at once (redis-client.ts, writeTurnNow), the turn's last in the turn's write (atTurnsWrite). On a
 * Redis Cluster each admission is a call of its own (the keys of one call must share a slot).
 */
import { Cluster, ReplyError } from 'ioredis';
import { MeterUnavailableError } from './meter.js';
import { atTurnsWrite, writeTurnNow, type ScriptedRedis } from './redis-client.js';
import { ADMISSION_KEYS, ADMISSION_REPLY } from './redis-meter-script.js';

/**
 * The most admissions one call of the script carries. A call that is full leaves at once, mid-turn; the
 * turn's last admissions leave at its end. Sent only at the end of the turn, a busy server's admissions went
 * in lockstep: a turn read ~32 requests and sent their one call, the request thread then waited for Redis
 * with nothing to do, and Redis had waited for it (the request thread idle a third of the time, the 2 cores
 * 72% busy, PostgreSQL + Redis item GET at 50 connections). Sent 16 at a time, Redis runs the first call while
 * the turn reads the next requests: 8-25% more requests a second in turns with it, the cores 81% busy
 * (6, 10 and 24 a call gave the same, 24 in pairs of servers once the records were one write a call).
 */
export const ADMISSIONS_PER_CALL = 16;

/** An admission waiting for the end of the turn to go to Redis with the turn's others. */
interface QueuedAdmission {
  /** admissionKeys: the script's six, then where its record goes (the call's, once sent). */
  keys: string[];
  args: Array<string | number>;
  /** Its five values of the script's reply. */
  resolve(reply: number[]): void;
  reject(error: MeterUnavailableError): void;
}

export class AdmissionCalls {
  /** False on a Redis Cluster: each admission is a call of its own. */
  private readonly batches: boolean;
  /** The admissions of this turn not yet sent; a flush is registered whenever there is one. */
  private queued: QueuedAdmission[] = [];

  constructor(private readonly redis: ScriptedRedis<'meterAdmit'>) {
    this.batches = !(this.redis instanceof Cluster);
  }

  /**
   * Sends one admission with others asked for in this turn: a call's first registers the flush that sends
   * what is queued (sendQueued) just before the turn's write, and a call that is full leaves at once. On a
   * Redis Cluster, or when the connection cannot write now, it goes at once and alone (and then fails at
   * once, as any command does).
   */
  send(keys: string[], args: Array<string | number>): Promise<number[]> {
    return new Promise<number[]>((resolve, reject) => {
      this.queued.push({ keys, args, resolve, reject });
      if (this.queued.length === 1) {
        if (!(this.batches && atTurnsWrite(this.redis, this.sendQueued))) this.sendQueued();
      } else if (this.queued.length === ADMISSIONS_PER_CALL) {
        this.sendQueued();
        writeTurnNow(this.redis);
      }
    });
  }

  /** Sends the queued admissions as one call (none: nothing), in the order they were asked for. */
  private readonly sendQueued = (): void => {
    const queued = this.queued;
    if (queued.length === 0) return;
    this.queued = [];
    this.sendCall(queued);
  };

  /**
   * One call of the script for these admissions; each gets its own five values. A failed call fails each of
   * them with its error: one whose reply was lost may have run, and each admission's caller undoes its own.
   */
  private sendCall(call: QueuedAdmission[]): void {
    const n = call.length;
    // The number of keys, the call's records, each admission's keys, then every admission's arguments
    // (ioredis flattens the lists). Each admission's last key, where its record goes, becomes the call's:
    // its undo looks there.
    const record = call[0]!.keys[ADMISSION_KEYS]!;
    const keys = new Array<string>(1 + n * ADMISSION_KEYS);
    keys[0] = record;
    const parts = new Array<number | Array<string | number>>(2 + n);
    parts[0] = keys.length;
    parts[1] = keys;
    for (let i = 0; i < n; i++) {
      const admission = call[i]!;
      for (let j = 0; j < ADMISSION_KEYS; j++) keys[1 + i * ADMISSION_KEYS + j] = admission.keys[j]!;
      admission.keys[ADMISSION_KEYS] = record;
      parts[2 + i] = admission.args;
    }
    (this.redis.meterAdmit(...parts) as Promise<Array<number | string>>).then(
      (reply) => {
        // Never thrown from here: nothing awaits this promise.
        if (!Array.isArray(reply)) reply = [];
        for (let i = 0; i < n; i++) {
          const at = i * ADMISSION_REPLY;
          if (reply[at] === -3) call[i]!.reject(new MeterUnavailableError(new ReplyError(String(reply[at + 1])) as Error));
          else call[i]!.resolve(reply.slice(at, at + ADMISSION_REPLY) as number[]);
        }
      },
      (error: unknown) => {
        for (const admission of call) admission.reject(new MeterUnavailableError(error));
      },
    );
  }
}
