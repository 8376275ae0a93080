import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Command } from 'commander';
import { InputError } from '../../../errors/input-error.js';
import { importPrices } from '../../../services/price-import.service.js';
import { print, printJson, withStore } from '../../context.js';
import { withProgress } from '../../progress.js';

export function importPricesCommand(): Command {
  return new Command('prices')
    .description("import the aggregator's price CSV (the export's columns); upserts by masterItemId and scrapeDate; all or nothing")
    .argument('<file>', 'CSV file')
    .option('--json', 'print { "rows": N, "items": N } as JSON')
    .action(async (file: string, options: { json?: boolean }) => {
      let size: number;
      try {
        size = (await stat(file)).size;
      } catch (error) {
        throw new InputError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
      }
      await withStore(async ({ store }) => {
        // The row count is unknown until the end; the file's size against the bytes read says how far it is.
        const result = await withProgress({ label: 'import', quiet: options.json === true }, (progress) =>
          importPrices(store, createReadStream(file), { progress, size }),
        );
        if (options.json) return printJson(result);
        print(`Imported ${result.rows} price rows for ${result.items} items.`);
      });
    });
}
