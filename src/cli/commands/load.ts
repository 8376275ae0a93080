import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { InputError } from '../../errors/input-error.js';
import { loadDataset } from '../../load/load-dataset.js';
import { print, printJson, refusingRows, withStore } from '../context.js';
import { withProgress } from '../progress.js';

export function loadCommand(): Command {
  return new Command('load')
    .description(
      'load a dataset file (accounts, keys, catalogue, prices, collection, listings, offers, transactions); all or nothing: ' +
        'a refused file names every bad row (the first 100, and a count of the rest)',
    )
    .argument('<file>', 'dataset JSON file')
    .option('--dry-run', 'check the whole file as a load does (against the store too), say what it would write, and write nothing')
    .option(
      '--json',
      'print { "accounts": {ref: id}, "keys": {ref: "<full key>"} } as JSON; on a dry run { "dryRun": true, "counts": {section: N} }; ' +
        'a refused file: { "errors": [{line, section, column, value, message}], "more": N }',
    )
    .action(async (file: string, options: { json?: boolean; dryRun?: boolean }) => {
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (error) {
        throw new InputError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
      }
      let data: unknown;
      try {
        data = JSON.parse(text);
      } catch (error) {
        throw new InputError(`${file} is not valid JSON: ${(error as Error).message}`);
      }
      const json = options.json === true;
      const dryRun = options.dryRun === true;
      await withStore(async ({ config, store, now }) => {
        const result = await refusingRows(json, () =>
          withProgress({ label: dryRun ? 'load (dry run)' : 'load', quiet: json }, (progress) =>
            loadDataset(store, data as Record<string, unknown>, { keyPrefix: config.keyPrefix, now, progress, dryRun }),
          ),
        );
        const counts = Object.entries(result.counts).map(([section, n]) => `${n} ${section}`).join(', ');
        // A dry run's keys were rolled back with the rest: none of them works, so none is shown.
        if (dryRun) return json ? printJson({ dryRun: true, counts: result.counts }) : print(`Dry run: would load ${counts}; nothing written.`);
        if (json) return printJson({ accounts: result.accounts, keys: result.keys });
        print(`Loaded ${counts}.`);
        for (const [ref, key] of Object.entries(result.keys)) print(`key ${ref} (shown once): ${key}`);
      });
    });
}
