import { Command } from 'commander';
import { createKey, parseScopes } from '../../../admin/keys.service.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';

export function keysCreateCommand(): Command {
  return new Command('create')
    .description('create an API key; the key is printed once and never again')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--scopes <list>', 'comma-separated scopes (an empty string for none)')
    .option('--name <name>', 'a label for the key', 'default')
    .option('--expires-at <iso>', 'expiry, ISO 8601 date-time')
    .option('--json', 'print { "id": N, "key": "<full key>" } as JSON')
    .action(async (options: { account: string; scopes: string; name: string; expiresAt?: string; json?: boolean }) => {
      const accountId = positiveInt('--account', options.account);
      const scopes = parseScopes(options.scopes);
      await withStore(async ({ config, store, now }) => {
        const { id, key } = await createKey(store, {
          accountId,
          scopes,
          name: options.name,
          now,
          keyPrefix: config.keyPrefix,
          ...(options.expiresAt !== undefined ? { expiresAt: options.expiresAt } : {}),
        });
        if (options.json) return printJson({ id, key });
        print(`Created key ${id} for account ${accountId}. Shown once, keep it:`);
        print(`  ${key}`);
      });
    });
}
