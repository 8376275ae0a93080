/**
 * The price guide as a file: the unfiltered CSV export is the same bytes for every caller until the next
 * load or import, so each server writes it once per data version, in the background, and serves it from
 * disk. Filtered exports copy their rows' byte ranges from the same file (guide-rows.ts) once its rows
 * are scanned. Any request while the current version's file is not written and scanned yet streams from
 * the store as before: a request never waits for the file.
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
import type { PricedRuns } from '../store/search/priced-runs.js';
import { copyGuideRows, scanGuideRows, type GuideRows } from './guide-rows.js';

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
  /** Where the rows of the known version's file start, once scanned (filtered exports copy from it). */
  private rows: { version: number; rows: GuideRows } | null = null;
  private scanning: Promise<void> | null = null;
  private scanFailedAt = -Infinity;
  private firstCheck: Promise<void> | null = null;
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
    this.firstCheck = this.check();
    this.timer = setInterval(() => void this.check(), this.options.pollMs ?? PRICE_GUIDE_POLL_MS);
    this.timer.unref();
  }

  /**
   * Resolves once the first check after start has ended and, when the current version's file was there,
   * its rows are scanned: start-up may wait for this (bounded), as it does for the search index.
   */
  async ready(): Promise<void> {
    await this.firstCheck;
    await this.scanning;
  }

  /** Stops watching and ends a write or scan in progress (a temporary file is removed). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.abort.abort();
    this.rows = null;
    await Promise.all([this.writing, this.scanning]);
  }

  /**
   * Where the rows of `version`'s file start, or null while they are not known (not written or not
   * scanned yet, or another version's): the caller then streams from the store.
   */
  rowsOf(version: number): GuideRows | null {
    return this.rows !== null && this.rows.version === version ? this.rows.rows : null;
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
      this.found(version);
      return handle;
    } catch (error) {
      if (!isMissing(error)) this.options.log.warn({ err: error }, 'price guide: cannot open the file; streaming from the store');
      if (this.known === version) this.known = null;
      this.startWrite();
      return null;
    }
  }

  /**
   * A filtered export at `version` from the file: the header and the rows of `runs` (the search index's
   * answer at the same version), or null when the file's rows are not known for `version` or do not
   * match the index's idea of them; the caller then streams from the store. `close` releases the file.
   */
  async filtered(version: number, runs: PricedRuns): Promise<{ chunks: AsyncGenerator<Buffer>; close(): Promise<void> } | null> {
    const rows = this.rowsOf(version);
    if (rows === null) return null;
    const { priced } = runs;
    if (rows.rows !== priced.rows || rows.firstId !== priced.firstId || rows.lastId !== priced.lastId) {
      this.options.log.warn({ version, fileRows: rows.rows, indexRows: priced.rows }, 'price guide: the file and the search index disagree; streaming from the store');
      return null;
    }
    const file = await this.open(version);
    if (file === null) return null;
    try {
      // Another server sharing the directory writes the same bytes; anything else is not this file.
      if ((await file.stat()).size === rows.bounds[rows.rows]) return { chunks: copyGuideRows(file, rows, runs.runs()), close: () => file.close() };
    } catch (error) {
      this.options.log.warn({ err: error }, 'price guide: cannot read the file; streaming from the store');
    }
    await file.close();
    return null;
  }

  /** The poll: a file for the current version, or a write of it. */
  private check(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.options
      .dataVersion()
      .then(async (version) => {
        if (this.closed) return;
        if (version === this.known) {
          // A scan that failed is tried again.
          this.scanRows(version);
          return;
        }
        const dir = this.options.dir as string;
        try {
          await stat(join(dir, fileName(await this.id(), version)));
          this.found(version);
        } catch (error) {
          if (!isMissing(error)) throw error;
          this.startWrite();
        }
      })
      .catch((error: unknown) => this.options.log.warn({ err: error }, 'price guide: cannot check the data version'));
  }

  /** `version`'s file is there: its rows are scanned unless they are known. */
  private found(version: number): void {
    this.known = version;
    this.scanRows(version);
  }

  /** Scans the rows of `version`'s file in the background; one scan at a time, the latest known version next. */
  private scanRows(version: number): void {
    if (this.closed || this.scanning !== null || this.rowsOf(version) !== null) return;
    if (performance.now() - this.scanFailedAt < RETRY_AFTER_FAILURE_MS) return;
    // Another version's offsets serve no request that this one's file can: let them go first.
    this.rows = null;
    this.scanning = this.id()
      .then((storeId) => this.scanned(join(this.options.dir as string, fileName(storeId, version)), version))
      .then((rows) => {
        // Only the latest known version's rows are kept (a write may have found a newer one meanwhile).
        if (rows !== null && !this.closed && this.known === version) this.rows = { version, rows };
      })
      .catch((error: unknown) => {
        this.scanFailedAt = performance.now();
        this.options.log.warn({ err: error }, 'price guide: cannot scan its rows; filtered exports stream from the store');
      })
      .finally(() => {
        this.scanning = null;
        if (this.known !== null && this.known !== version && !this.closed) {
          this.scanFailedAt = -Infinity;
          this.scanRows(this.known);
        }
      });
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
          void this.check();
        }
      });
  }

  private async write(): Promise<void> {
    const dir = this.options.dir as string;
    const storeId = await this.id();
    await mkdir(dir, { recursive: true });
    const started = performance.now();
    const counter = { rows: 0 };
    let rows: GuideRows | null = null;
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
        // Its rows are known when it becomes visible (filtered exports copy from it).
        rows = await this.scanned(temp, snapshotVersion);
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
    if (rows !== null) this.rows = { version, rows };
    this.scanRows(version);
    await this.removeOthers(dir, storeId, version);
  }

  /** The rows of the file at `path`, or null when they cannot be read (logged; filtered exports then stream from the store). */
  private async scanned(path: string, version: number): Promise<GuideRows | null> {
    try {
      return await scanGuideRows(path, this.abort.signal);
    } catch (error) {
      if (this.abort.signal.aborted) return null;
      this.scanFailedAt = performance.now();
      // Missing: removed after a newer version's file was written, which is scanned next.
      if (!isMissing(error)) this.options.log.warn({ err: error, version }, 'price guide: cannot read where its rows start; filtered exports stream from the store');
      return null;
    }
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
