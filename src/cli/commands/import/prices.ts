import { createReadStream } from 'node:fs';
import { access } from 'node:fs/promises';
import { Command } from 'commander';
import { InputError } from '../../../admin/input-error.js';
import { importPrices } from '../../../admin/price-import.service.js';
import { endProgress, print, printJson, progressReporter, withStore } from '../../context.js';

export function importPricesCommand(): Command {
  return new Command('prices')
    .description("import the aggregator's price CSV (the export's columns); upserts by masterItemId and scrapeDate; all or nothing")
    .argument('<file>', 'CSV file')
    .option('--json', 'print { "rows": N, "items": N } as JSON')
    .action(async (file: string, options: { json?: boolean }) => {
      try {
        await access(file);
      } catch (error) {
        throw new InputError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
      }
      await withStore(async ({ store }) => {
        const progress = progressReporter();
        const result = await importPrices(store, createReadStream(file), (rows) => progress('prices', rows));
        endProgress();
        if (options.json) return printJson(result);
        print(`Imported ${result.rows} price rows for ${result.items} items.`);
      });
    });
}
