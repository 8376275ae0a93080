/**
 * The price guide as a file: the unfiltered CSV export is the same bytes for every caller until the next
 * load or import, so each server writes it once per data version, in the background, and serves it from
 * disk. Filtered exports, and any request while the current version's file is not written yet, stream
 * from the store as before: a request never waits for the file.
 *
 * Files are named by the store and the data version (`prices-<store>-v<version>.csv`), written under a
 * temporary name beginning with a dot and renamed into place once complete and flushed to disk, so a
 * crash mid-write leaves only a temporary file, which is never served. Several servers may share the
 * directory: they write identical bytes, the rename is atomic, and each serves whatever file is there.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyBaseLogger } from 'fastify';
import { csvChunks } from '../csv/csv-chunks.js';
import type { Store } from '../store/database.js';
import { EXPORT_COLUMNS } from '../domain/export-columns.js';
import type { ExportRow } from '../store/repositories/price-export.js';
import { readPriceGuideSnapshot, storeIdentity } from '../store/repositories/price-guide-snapshot.js';

/** How often a server checks the data version for a load or import made by another process. */
export const PRICE_GUIDE_POLL_MS = 5000;
/** After a failed write (disk full, directory not writable, store away), no other starts for this long. */
const RETRY_AFTER_FAILURE_MS = 60_000;
/** A temporary file this old is a dead writer's, whatever its version. */
const STALE_TEMP_MS = 60 * 60 * 1000;

const FILE = /^prices-([0-9a-f]{12})-v([0-9]+)\.csv$/;
const TEMP = /^\.prices-([0-9a-f]{12})-v([0-9]+)\.csv\..*\.tmp$/;

export interface PriceGuideOptions {
  /** Where the files live; null turns the file off (every export streams from the store). */
  dir: string | null;
  store: Store;
  dataVersion: () => Promise<number>;
  log: FastifyBaseLogger;
  pollMs?: number;
}

function fileName(storeId: string, version: number): string {
  return `prices-${storeId}-v${version}.csv`;
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT';
}

/** The batches, counting the rows that go through, for the log line. */
async function* counting(batches: AsyncGenerator<ExportRow[]>, counter: { rows: number }): AsyncGenerator<ExportRow[]> {
  for await (const batch of batches) {
    counter.rows += batch.length;
    yield batch;
  }
}

export class PriceGuide {
  private storeId: Promise<string> | null = null;
  /** The version whose file this process last wrote or found, so the poll costs no file system call. */
  private known: number | null = null;
  private writing: Promise<void> | null = null;
  /** Asked for while a write ran: check again once it ends (the version may have moved on). */
  private askedAgain = false;
  private failedAt = -Infinity;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly abort = new AbortController();

  constructor(private readonly options: PriceGuideOptions) {}

  get enabled(): boolean {
    return this.options.dir !== null && !this.closed;
  }

  /** Writes the current version's file if it is missing, then checks again every pollMs. */
  start(): void {
    if (!this.enabled || this.timer !== null) return;
    this.check();
    this.timer = setInterval(() => this.check(), this.options.pollMs ?? PRICE_GUIDE_POLL_MS);
    this.timer.unref();
  }

  /** Stops watching and ends a write in progress (its temporary file is removed). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.abort.abort();
    await this.writing;
  }

  /**
   * The file of `version`, opened, or null when it is not written (yet): a write then starts in the
   * background, and the caller streams from the store. The caller owns the handle.
   */
  async open(version: number): Promise<FileHandle | null> {
    const dir = this.options.dir;
    if (dir === null || this.closed) return null;
    try {
      const handle = await open(join(dir, fileName(await this.id(), version)), 'r');
      this.known = version;
      return handle;
    } catch (error) {
      if (!isMissing(error)) this.options.log.warn({ err: error }, 'price guide: cannot open the file; streaming from the store');
      if (this.known === version) this.known = null;
      this.startWrite();
      return null;
    }
  }

  /** The poll: a file for the current version, or a write of it. */
  private check(): void {
    if (this.closed) return;
    this.options
      .dataVersion()
      .then(async (version) => {
        if (version === this.known || this.closed) return;
        const dir = this.options.dir as string;
        try {
          await stat(join(dir, fileName(await this.id(), version)));
          this.known = version;
        } catch (error) {
          if (!isMissing(error)) throw error;
          this.startWrite();
        }
      })
      .catch((error: unknown) => this.options.log.warn({ err: error }, 'price guide: cannot check the data version'));
  }

  private id(): Promise<string> {
    this.storeId ??= storeIdentity(this.options.store).then((identity) => createHash('sha256').update(identity).digest('hex').slice(0, 12));
    // A failed lookup (store away) is not kept: the next call asks again.
    this.storeId.catch(() => (this.storeId = null));
    return this.storeId;
  }

  private startWrite(): void {
    if (this.closed) return;
    if (this.writing !== null) {
      this.askedAgain = true;
      return;
    }
    // Neither requests nor the poll hammer a full disk or a struggling store with back-to-back attempts.
    if (performance.now() - this.failedAt < RETRY_AFTER_FAILURE_MS) return;
    this.writing = this.write()
      .catch((error: unknown) => {
        if (this.abort.signal.aborted) return;
        this.failedAt = performance.now();
        this.options.log.warn({ err: error }, 'price guide: write failed; exports stream from the store');
      })
      .finally(() => {
        this.writing = null;
        if (this.askedAgain) {
          this.askedAgain = false;
          this.check();
        }
      });
  }

  private async write(): Promise<void> {
    const dir = this.options.dir as string;
    const storeId = await this.id();
    await mkdir(dir, { recursive: true });
    const started = performance.now();
    const counter = { rows: 0 };
    const version = await readPriceGuideSnapshot(this.options.store, async (snapshotVersion, batches) => {
      const path = join(dir, fileName(storeId, snapshotVersion));
      try {
        await stat(path);
        // Another server sharing the directory, or this one before a restart, has written it.
        await batches.return(undefined);
        return snapshotVersion;
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
      const temp = join(dir, `.${fileName(storeId, snapshotVersion)}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
      try {
        // flush: the data reaches the disk before the rename makes it visible, so no power cut leaves
        // a complete name on an incomplete file.
        await pipeline(Readable.from(csvChunks(EXPORT_COLUMNS, counting(batches, counter))), createWriteStream(temp, { flush: true }), {
          signal: this.abort.signal,
        });
        await rename(temp, path);
      } catch (error) {
        await rm(temp, { force: true });
        throw error;
      }
      this.options.log.info(
        { version: snapshotVersion, rows: counter.rows, ms: Math.round(performance.now() - started) },
        'price guide written',
      );
      return snapshotVersion;
    });
    this.known = version;
    await this.removeOthers(dir, storeId, version);
  }

  /** Other versions' files of this store, and temporary files left by writers that will never finish. */
  private async removeOthers(dir: string, storeId: string, version: number): Promise<void> {
    for (const name of await readdir(dir)) {
      const file = FILE.exec(name) ?? TEMP.exec(name);
      if (file === null || file[1] !== storeId) continue;
      const path = join(dir, name);
      try {
        if (name.startsWith('.')) {
          const stale = Number(file[2]) < version || Date.now() - (await stat(path)).mtimeMs > STALE_TEMP_MS;
          if (!stale) continue;
        } else if (Number(file[2]) === version) {
          continue;
        }
        // A request still reading an old file keeps its open handle: removing the name does not cut it.
        await rm(path, { force: true });
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
    }
  }
}
