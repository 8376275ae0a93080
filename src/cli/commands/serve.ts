import { Command } from 'commander';
import { DEFAULT_DEMO_ITEMS, seedDemo, storeIsEmpty } from '../../admin/demo-seed.service.js';
import { systemClock } from '../../clock.js';
import { loadConfig } from '../../config.js';
import { API_PREFIX } from '../../http/app.js';
import { closeOnSignals, startServer } from '../../server.js';
import { migrateToLatest, openStore } from '../../store/database.js';
import { withProgress } from '../progress.js';

export function serveCommand(): Command {
  return new Command('serve')
    .description('migrate if needed, then serve the API at /developer/v1 (and /healthz, /readyz on OPS_PORT)')
    .option('--demo-if-empty', 'seed the demo data first when the store is empty, and print the demo key once')
    .action(async (options: { demoIfEmpty?: boolean }) => {
      const config = loadConfig();
      const store = openStore(config.database);
      await migrateToLatest(store);
      if (options.demoIfEmpty && (await storeIsEmpty(store))) {
        const result = await withProgress({ label: 'seed' }, (progress) =>
          seedDemo(store, { items: DEFAULT_DEMO_ITEMS, keyPrefix: config.keyPrefix, now: systemClock.now(), progress }),
        );
        process.stdout.write(
          `Seeded the demo store (${result.counts.catalogue} items). Demo key, shown once:\n\n  ${result.keys.demo}\n\n`,
        );
      }
      const server = await startServer(config, { store });
      process.stdout.write(
        `shelfapi serving http://${config.host}:${config.port}${API_PREFIX} (health: http://${config.host}:${config.opsPort}/healthz)\n`,
      );
      await closeOnSignals(server);
    });
}
