/**
 * `shelfapi load` and `seed`: writes a dataset (docs/contract.md, "Operator command line") in one transaction. Every row is
 * checked as it is read, against its schema (src/domain/dataset.ts), the file and the store; the first bad
 * row refuses the whole dataset with a message naming its section and row, and the transaction is rolled
 * back, so nothing of it is written.
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
}

export async function loadDataset(store: Store, input: DatasetInput, options: LoadOptions): Promise<LoadResult> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new DatasetError(`the dataset must be a JSON object with sections ${SECTION_NAMES.join(', ')}`);
  }
  for (const section of Object.keys(input)) {
    if (!(SECTION_NAMES as readonly string[]).includes(section)) {
      throw new DatasetError(`unknown section '${section}' (sections: ${SECTION_NAMES.join(', ')})`);
    }
  }
  const progress = options.progress ?? silentProgress;
  const result = await withWriteTransaction(store, async (trx) => {
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
      accountIdOf: accountRefs(accountIds),
    };
    await loadAccounts(ctx);
    await loadKeys(ctx);
    const items = await loadCatalogue(ctx);
    await loadPrices(ctx, items);
    await loadMarketplace(ctx, items);
    await bumpDataVersion(trx);
    return ctx.out;
  });
  if ((result.counts.catalogue ?? 0) + (result.counts.prices ?? 0) + (result.counts.collection ?? 0) >= ANALYZE_AFTER_ROWS) {
    await step(progress, 'statistics', () => refreshStatistics(store));
  }
  return result;
}
