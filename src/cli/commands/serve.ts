import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import { Command } from 'commander';
import { DEFAULT_DEMO_ITEMS, seedDemo, storeIsEmpty } from '../../services/demo-seed.service.js';
import { systemClock } from '../../clock.js';
import { loadConfig, parseWorkers } from '../../config.js';
import { API_PREFIX } from '../../http/api/api-surface.js';
import { migrateToLatest, openStore } from '../../store/database.js';
import { HANDOVER_MAX_MINUTES, handoverSecret, mintHandoverToken, signInUrl } from '../../services/settings-auth/handover-token.js';
import { findAccountByEmail } from '../../store/repositories/account.repository.js';
import type { Store } from '../../store/database.js';
import type { Config } from '../../config.js';
import { withProgress } from '../progress.js';
import { assertPortsFree } from '../free-ports.js';

const DEMO_EMAIL = 'demo@shelfapi.dev';

/** A fresh sign-in link for the demo account's settings screen, or null when there is no demo account. */
async function demoSignInLink(store: Store, config: Readonly<Config>): Promise<string | null> {
  const account = await findAccountByEmail(store.db, store.dialect, DEMO_EMAIL);
  if (account === undefined) return null;
  const now = systemClock.now();
  const { token } = await mintHandoverToken({ secret: await handoverSecret(store, config, now), accountId: account.id, now });
  return signInUrl(config, token);
}

export function serveCommand(): Command {
  return new Command('serve')
    .description('migrate if needed, then serve the API at /developer/v1 (and /healthz, /readyz on OPS_PORT)')
    .option('--demo-if-empty', 'seed the demo data first when the store is empty, and print the demo key once')
    .option('--workers <n>', 'processes serving the port: a whole number, or auto for every core (default: WORKERS, else 1)')
    .action(async (options: { demoIfEmpty?: boolean; workers?: string }) => {
      const config = loadConfig();
      const workers = parseWorkers('--workers', options.workers, availableParallelism()) ?? config.workers;
      // A worker of `--workers N`: the primary has checked the ports, migrated and seeded.
      // The server's modules load only here: every other command starts without the app (a few hundred ms).
      if (cluster.isWorker) return (await import('../../workers/worker.js')).runWorker(config);
      await assertPortsFree(config);
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
      if (options.demoIfEmpty) {
        const link = await demoSignInLink(store, config);
        if (link !== null) {
          process.stdout.write(
            `Manage the demo account's keys and see its usage in Settings → Developer API (this link works once, within ${HANDOVER_MAX_MINUTES} minutes;\n` +
              `\`shelfapi accounts sign-in-link ID\` makes another):\n\n  ${link}\n\n`,
          );
        }
      }
      const serving = `shelfapi serving http://${config.host}:${config.port}${API_PREFIX} (health: http://${config.host}:${config.opsPort}/healthz)`;
      if (workers === 1) {
        const { closeOnSignals, startServer } = await import('../../server.js');
        const server = await startServer(config, { store });
        process.stdout.write(`${serving}\n`);
        await closeOnSignals(server, config.drainDelayMs);
        return;
      }
      // The workers open their own: the primary holds no store while it serves.
      await store.close();
      const { runPrimary } = await import('../../workers/primary.js');
      const primary = await runPrimary(config, workers);
      process.stdout.write(`${serving} with ${workers} workers\n`);
      if ((await primary.closed) !== 0) throw new Error('a worker did not drain and exit cleanly (see its log lines above)');
    });
}
