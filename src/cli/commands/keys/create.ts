import { Command } from 'commander';
import { createKey, parseScopes } from '../../../services/keys.service.js';
import { OPERATOR } from '../../../services/actor.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';

export function keysCreateCommand(): Command {
  return new Command('create')
    .description('create an API key; the key is printed once and never again')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--scopes <list>', 'comma-separated scopes, at least one')
    .option('--name <name>', 'a name for the key, 1 to 64 characters, unique among the account\'s live keys (default: "default", then "default 2", ...)')
    .option('--expires-at <iso>', 'expiry, ISO 8601 date-time (default: never)')
    .option('--json', 'print { "id": N, "key": "<full key>" } as JSON')
    .action(async (options: { account: string; scopes: string; name?: string; expiresAt?: string; json?: boolean }) => {
      const accountId = positiveInt('--account', options.account);
      const scopes = parseScopes(options.scopes);
      await withStore(async ({ config, store, now }) => {
        const { id, key } = await createKey(store, {
          accountId,
          scopes,
          name: options.name ?? null,
          expiresAt: options.expiresAt ?? null,
          now,
          keyPrefix: config.keyPrefix,
          actor: OPERATOR,
        });
        if (options.json) return printJson({ id, key });
        print(`Created key ${id} for account ${accountId}. Shown once, keep it:`);
        print(`  ${key}`);
      });
    });
}
