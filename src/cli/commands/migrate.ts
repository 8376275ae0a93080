import { Command } from 'commander';
import { loadConfig } from '../../config.js';
import { migrateToLatest, openStore } from '../../store/database.js';
import { print, printJson } from '../context.js';

export function migrateCommand(): Command {
  return new Command('migrate')
    .description('bring the store schema up to date')
    .option('--json', 'print { "applied": [...] } as JSON')
    .action(async (options: { json?: boolean }) => {
      // Not withStore: it migrates before the work, so this command would always find nothing to apply
      // and report an empty list even on a new store.
      const store = openStore(loadConfig().database, { queryTimeoutMs: null });
      try {
        const applied = await migrateToLatest(store);
        if (options.json) printJson({ applied });
        else print(applied.length === 0 ? 'The store is up to date.' : `Applied: ${applied.join(', ')}`);
      } finally {
        await store.close();
      }
    });
}
