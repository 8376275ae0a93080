import { Command } from 'commander';
import { accountKeys } from '../../../services/key-lookup.js';
import { SCOPES } from '../../../domain/scopes.js';
import { isLiveKey, keyStatus } from '../../../keys/key-status.js';
import type { KeyRecord } from '../../../store/repositories/api-key.repository.js';
import { positiveInt, print, printJson, withMeter, withStore } from '../../context.js';
import { statusText } from '../../key-text.js';
import { table } from '../../table.js';

/** Every scope spelled out is ~85 characters; "all" keeps the table within a terminal for the common demo key. */
function scopes(key: KeyRecord): string {
  if (key.scopes.length === 0) return '(none)';
  if (SCOPES.every((s) => key.scopes.includes(s))) return 'all';
  return key.scopes.join(',');
}

export function keysListCommand(): Command {
  return new Command('list')
    .description("list an account's keys (never the keys themselves: their last four characters); times in UTC")
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print the keys as a JSON array, each with its status { status, at }')
    .action(async (options: { account: string; json?: boolean }) => {
      const accountId = positiveInt('--account', options.account);
      await withStore(async (ctx) => {
        const { now } = ctx;
        const keys = await withMeter(ctx, (meter) => accountKeys(ctx.store, meter, accountId));
        if (options.json) return printJson(keys.map((k) => ({ ...k, status: keyStatus(k, now) })));
        if (keys.length === 0) return print(`Account ${accountId} has no keys.`);
        print(
          table(
            ['id', 'name', 'key', 'status', 'created', 'expires', 'last used (UTC)', 'scopes'],
            keys.map((k) => [
              String(k.id),
              k.name,
              `…${k.lastFour}`,
              statusText(k, now),
              k.createdAt.slice(0, 10),
              k.expiresAt?.slice(0, 10) ?? 'never',
              k.lastUsedAt?.replace('T', ' ').slice(0, 19) ?? 'never',
              scopes(k),
            ]),
            ['right'],
          ),
        );
        // Active: working and not being rolled away (what counts toward the limit of 20).
        const active = keys.filter((k) => isLiveKey(k, now)).length;
        print();
        print(`Account ${accountId}: ${keys.length} key${keys.length === 1 ? '' : 's'}, ${active} active.`);
      });
    });
}
