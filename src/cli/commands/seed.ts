import { Command } from 'commander';
import { DEFAULT_DEMO_ITEMS, seedDemo } from '../../services/demo-seed.service.js';
import { InputError } from '../../errors/input-error.js';
import { positiveInt, print, printJson, withStore } from '../context.js';
import { withProgress } from '../progress.js';

export function seedCommand(): Command {
  return new Command('seed')
    .description('fill an empty store with a generated demo catalogue, prices and a demo account; prints the demo key once')
    .option('--demo', 'generate the demo data set (required)')
    .option('--items <n>', 'catalogue items to generate', String(DEFAULT_DEMO_ITEMS))
    .option('--json', 'print { "accounts": {...}, "keys": {...}, "counts": {...} } as JSON')
    .action(async (options: { demo?: boolean; items: string; json?: boolean }) => {
      if (!options.demo) throw new InputError('seed needs --demo (the only seed there is)');
      const items = positiveInt('--items', options.items);
      await withStore(async ({ config, store, now }) => {
        const started = Date.now();
        const result = await withProgress({ label: 'seed', quiet: options.json === true }, (progress) =>
          seedDemo(store, { items, keyPrefix: config.keyPrefix, now, progress }),
        );
        if (options.json) return printJson(result);
        print(`Seeded ${result.counts.catalogue} items, ${result.counts.prices} price records in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
        print(`Demo account id ${result.accounts.demo}. Demo key (shown once, keep it):`);
        print(`  ${result.keys.demo}`);
        if (result.keys.collector !== undefined) {
          print(`Collector account id ${result.accounts.collector} (a large collection), key (shown once):`);
          print(`  ${result.keys.collector}`);
        }
      });
    });
}
