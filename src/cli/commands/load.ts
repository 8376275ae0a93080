import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { InputError } from '../../errors/input-error.js';
import { loadDataset } from '../../load/load-dataset.js';
import { print, printJson, withStore } from '../context.js';
import { withProgress } from '../progress.js';

export function loadCommand(): Command {
  return new Command('load')
    .description('load a dataset file (accounts, keys, catalogue, prices, collection, listings, offers, transactions); all or nothing')
    .argument('<file>', 'dataset JSON file')
    .option('--json', 'print { "accounts": {ref: id}, "keys": {ref: "<full key>"} } as JSON')
    .action(async (file: string, options: { json?: boolean }) => {
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
      await withStore(async ({ config, store, now }) => {
        const result = await withProgress({ label: 'load', quiet: options.json === true }, (progress) =>
          loadDataset(store, data as Record<string, unknown>, { keyPrefix: config.keyPrefix, now, progress }),
        );
        if (options.json) return printJson({ accounts: result.accounts, keys: result.keys });
        print(`Loaded ${Object.entries(result.counts).map(([section, n]) => `${n} ${section}`).join(', ')}.`);
        for (const [ref, key] of Object.entries(result.keys)) print(`key ${ref} (shown once): ${key}`);
      });
    });
}
