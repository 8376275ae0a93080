/**
 * `shelfapi load` and `seed`: writes a dataset (docs/contract.md, "Operator command line") in one transaction. Every row is
 * checked as it is read, against its schema (src/domain/dataset.ts), the file and the store; a bad row is
 * set aside and the checks go on, and at the end any bad row refuses the whole dataset with every one of
 * them named (section, row, field, value; the first 100 and a count of the rest). The transaction is then
 * rolled back, so nothing of it is written. A dry run does the same and rolls back a good file too.
 */
import { SECTION_NAMES } from '../domain/dataset.js';
import type { Store } from '../store/database.js';
import { withWriteTransaction } from '../store/write-transaction.js';
import { bumpDataVersion } from '../store/read-cache.js';
import { ANALYZE_AFTER_ROWS, refreshStatistics } from '../store/analyze.js';
import { loadAccounts, loadKeys } from './accounts-and-keys.js';
import { bulkInserter } from './bulk-insert.js';
import { loadCatalogue, loadPrices } from './catalogue-and-prices.js';
import { DatasetError } from './dataset-error.js';
import { BadRows } from '../errors/bad-rows.js';
import { accountRefs, type DatasetInput, type LoadContext, type LoadResult } from './load-context.js';
import { loadMarketplace } from './marketplace.js';
import { silentProgress, step, type ProgressSink } from './progress.js';

export { DatasetError } from './dataset-error.js';
export type { DatasetInput, LoadResult } from './load-context.js';

export interface LoadOptions {
  keyPrefix: string;
  now: number;
  /**
   * Told when each section present in the input starts and ends, and every batch (or every
   * PROGRESS_EVERY rows of a small section) in between, for a progress display.
   */
  progress?: ProgressSink;
  /**
   * Checks the whole dataset exactly as a load does, in the same transaction, and rolls it back at the end:
   * the result's counts say what would have been written; nothing is (its keys are not kept: no key of it
   * works), and the data version (every ETag) stays.
   */
  dryRun?: boolean;
}

/** Whether a section's value can be walked as rows: a list (or the demo generator's lazy rows). */
const isRows = (value: unknown) => typeof value === 'object' && value !== null && Symbol.iterator in value;

export async function loadDataset(store: Store, input: DatasetInput, options: LoadOptions): Promise<LoadResult> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new DatasetError(`the dataset must be a JSON object with sections ${SECTION_NAMES.join(', ')}`);
  }
  for (const [section, value] of Object.entries(input)) {
    if (!(SECTION_NAMES as readonly string[]).includes(section)) {
      throw new DatasetError(`unknown section '${section}' (sections: ${SECTION_NAMES.join(', ')})`);
    }
    // Before any row is read: a section that is no list refuses the file as a whole, not row by row.
    if (value !== undefined && !isRows(value)) throw new DatasetError(`${section}: must be a list`);
  }
  const progress = options.progress ?? silentProgress;
  const dryRun = options.dryRun === true;
  const result = await withWriteTransaction(
    store,
    async (trx) => {
      const accountIds = new Map<string, number>();
      const ctx: LoadContext = {
        store,
        trx,
        input,
        keyPrefix: options.keyPrefix,
        now: options.now,
        nowIso: new Date(options.now).toISOString(),
        progress,
        bulk: bulkInserter(store, trx),
        out: { accounts: {}, keys: {}, counts: {} },
        accountIds,
        accountIdOf: accountRefs(input, accountIds),
        bad: new BadRows(SECTION_NAMES),
      };
      await loadAccounts(ctx);
      await loadKeys(ctx);
      const items = await loadCatalogue(ctx);
      await loadPrices(ctx, items);
      await loadMarketplace(ctx, items);
      // Every row was checked; any refused one refuses the file, with all of them (rolled back: nothing written).
      const refused = ctx.bad.error();
      if (refused !== null) throw refused;
      await bumpDataVersion(trx);
      return ctx.out;
    },
    { rollback: dryRun },
  );
  if (!dryRun && (result.counts.catalogue ?? 0) + (result.counts.prices ?? 0) + (result.counts.collection ?? 0) >= ANALYZE_AFTER_ROWS) {
    await step(progress, 'statistics', () => refreshStatistics(store));
  }
  return result;
}
