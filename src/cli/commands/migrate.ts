import { Command } from 'commander';
import { migrateToLatest } from '../../store/database.js';
import { print, printJson, withStore } from '../context.js';

export function migrateCommand(): Command {
  return new Command('migrate')
    .description('bring the store schema up to date')
    .option('--json', 'print { "applied": [...] } as JSON')
    .action(async (options: { json?: boolean }) => {
      await withStore(async ({ store }) => {
        const applied = await migrateToLatest(store);
        if (options.json) printJson({ applied });
        else print(applied.length === 0 ? 'The store is up to date.' : `Applied: ${applied.join(', ')}`);
      });
    });
}
