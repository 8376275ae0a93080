/**
 * A serving process's WAL checkpoints on SQLite, from a thread of its own. By default SQLite checkpoints
 * inside the commit that takes the WAL past 1,000 pages, on the thread that commits: in a server, the event
 * loop. Under load with thousands of keys the owners' statistics dirty ~1,000 pages a write, so nearly every
 * write also copied the WAL into the database file and waited for two fsyncs: 45-170 ms a write with the
 * event loop held, every request waiting (docs/performance.md, 2026-11-27).
 *
 * Here a thread with a connection of its own runs `wal_checkpoint(PASSIVE)` every CHECKPOINT_EVERY_MS:
 * PASSIVE never waits for readers or writers, and the process's commits only append to the WAL (which
 * SQLite starts again from its beginning once a checkpoint has copied all of it). The serving connection
 * keeps a checkpoint of its own past FALLBACK_CHECKPOINT_PAGES, for a thread that has stopped (it is started
 * again a second later) or cannot keep up, so the WAL stays bounded whatever happens to the thread.
 * A thread rather than a timer on the event loop: the copy and its fsyncs are the cost being moved.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SqliteDatabase from 'better-sqlite3';

/** How often the thread checkpoints. */
export const CHECKPOINT_EVERY_MS = 100;
/** WAL pages past which the serving connection checkpoints itself (64 MiB of 4 KiB pages). */
export const FALLBACK_CHECKPOINT_PAGES = 16_384;
const RESTART_DELAY_MS = 1000;

/**
 * The thread's whole program, CommonJS as an eval'd worker runs it: the module is better-sqlite3's path,
 * as this process resolved it. busy_timeout 0: a checkpoint that finds another under way (a second process
 * on the file) leaves it to that one and tries again at the next tick.
 */
const CHECKPOINT_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const conn = new Database(workerData.path, { fileMustExist: true });
conn.pragma('busy_timeout = 0');
const timer = setInterval(() => {
  try {
    const [result] = conn.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ walPages: result.log, checkpointed: result.checkpointed });
  } catch (error) {
    if (!/^SQLITE_BUSY/.test(String(error && error.code))) throw error;
  }
}, workerData.everyMs);
parentPort.on('message', () => {
  clearInterval(timer);
  conn.close();
  parentPort.close();
});
`;

export interface CheckpointThread {
  /** WAL pages not yet copied into the database file at the last checkpoint (0 before the first). */
  readonly walPagesBehind: number;
  /** How often the thread was started again after it stopped. */
  readonly restarts: number;
  close(): Promise<void>;
}

/**
 * Starts checkpointing `conn`'s file from a thread, and leaves the connection's own checkpoint as the
 * fallback only. `onError` hears of a thread that failed (it is started again).
 */
export function startCheckpointThread(conn: SqliteDatabase.Database, path: string, onError: (error: Error) => void): CheckpointThread {
  conn.pragma(`wal_autocheckpoint = ${FALLBACK_CHECKPOINT_PAGES}`);
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  let worker: Worker | null = null;
  let closed = false;
  const state = { walPagesBehind: 0, restarts: 0 };
  const spawn = () => {
    const current = new Worker(CHECKPOINT_THREAD, { eval: true, workerData: { module, path, everyMs: CHECKPOINT_EVERY_MS } });
    worker = current;
    // The thread must not keep a process alive that has nothing else to do.
    current.unref();
    current.on('message', (m: { walPages: number; checkpointed: number }) => {
      state.walPagesBehind = Math.max(0, m.walPages - m.checkpointed);
    });
    current.on('error', onError);
    current.on('exit', () => {
      if (closed || worker !== current) return;
      worker = null;
      state.restarts++;
      setTimeout(() => {
        if (!closed) spawn();
      }, RESTART_DELAY_MS).unref();
    });
  };
  spawn();
  return {
    get walPagesBehind() {
      return state.walPagesBehind;
    },
    get restarts() {
      return state.restarts;
    },
    async close() {
      closed = true;
      const current = worker;
      worker = null;
      if (current === null) return;
      const exited = new Promise<void>((resolve) => current.once('exit', () => resolve()));
      // Waited for: it keeps the process alive until it has closed its connection.
      current.ref();
      current.postMessage('close');
      await exited;
    },
  };
}
