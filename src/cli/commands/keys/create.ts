import { Command } from 'commander';
import { createKey } from '../../../services/keys.service.js';
import { NEVER_EXPIRES_WARNING } from '../../../services/key-expiry.js';
import { OPERATOR } from '../../../services/actor.js';
import { utcMinute } from '../../../services/time-text.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';

export function keysCreateCommand(): Command {
  return new Command('create')
    .description('create an API key; the key is printed once and never again')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--scopes <list>', 'comma-separated scopes, at least one')
    .option('--name <name>', 'a name for the key, 1 to 64 characters, unique among the account\'s live keys (default: "default", then "default 2", ...)')
    .option(
      '--expires-at <when>',
      'when the key stops working: 7d, 30d, 90d, 1y, a date (2027-01-31: the end of that day, UTC), an ISO 8601 date-time, or never (default: 90d, as on the settings screen)',
    )
    .option('--allowed-ips <list>', 'comma-separated IPv4/IPv6 addresses or CIDR ranges the key may be used from (default: any address)')
    .option('--json', 'print { "id": N, "key": "<full key>" } as JSON')
    .action(async (options: { account: string; scopes: string; name?: string; expiresAt?: string; allowedIps?: string; json?: boolean }) => {
      const accountId = positiveInt('--account', options.account);
      await withStore(async ({ config, store, now }) => {
        // The service reads the scopes, name, expiry and addresses (the screen's rules) and refuses every bad one at once.
        const { id, key, record } = await createKey(store, {
          accountId,
          scopes: options.scopes.split(','),
          name: options.name ?? null,
          expiresAt: options.expiresAt,
          allowedAddresses: options.allowedIps?.split(',') ?? [],
          now,
          keyPrefix: config.keyPrefix,
          actor: OPERATOR,
        });
        // On stderr: stdout stays the key (or the one JSON document) a script reads.
        if (record.expiresAt === null) process.stderr.write(`shelfapi: warning: this key never expires. ${NEVER_EXPIRES_WARNING}\n`);
        if (options.json) return printJson({ id, key });
        const expires = record.expiresAt === null ? 'never expires' : `expires ${utcMinute(record.expiresAt)}`;
        print(`Created key ${id} for account ${accountId} (${expires}). Shown once, keep it:`);
        print(`  ${key}`);
      });
    });
}
