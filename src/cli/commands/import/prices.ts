import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Command } from 'commander';
import { InputError } from '../../../errors/input-error.js';
import { importPrices } from '../../../services/price-import.service.js';
import { print, printJson, refusingRows, withStore } from '../../context.js';
import { withProgress } from '../../progress.js';

export function importPricesCommand(): Command {
  return new Command('prices')
    .description(
      "import the aggregator's price CSV (the export's columns); upserts by masterItemId and scrapeDate; all or nothing: " +
        'a refused file names every bad line (the first 100, and a count of the rest)',
    )
    .argument('<file>', 'CSV file')
    .option('--dry-run', 'check the whole file as an import does (the catalogue too), say what it would write, and write nothing')
    .option('--json', 'print { "rows": N, "items": N } as JSON ("dryRun": true on a dry run); a refused file: { "errors": [{line, column, value, message}], "more": N }')
    .action(async (file: string, options: { json?: boolean; dryRun?: boolean }) => {
      let size: number;
      try {
        size = (await stat(file)).size;
      } catch (error) {
        throw new InputError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
      }
      const json = options.json === true;
      const dryRun = options.dryRun === true;
      await withStore(async ({ store }) => {
        // The row count is unknown until the end; the file's size against the bytes read says how far it is.
        const result = await refusingRows(json, () =>
          withProgress({ label: dryRun ? 'import (dry run)' : 'import', quiet: json }, (progress) =>
            importPrices(store, createReadStream(file), { progress, size, dryRun }),
          ),
        );
        if (json) return printJson(dryRun ? { dryRun: true, ...result } : result);
        if (dryRun) print(`Dry run: would insert or update ${result.rows} price records for ${result.items} items; nothing written.`);
        else print(`Imported ${result.rows} price rows for ${result.items} items.`);
      });
    });
}
