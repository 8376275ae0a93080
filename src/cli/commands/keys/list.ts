import { Command } from 'commander';
import { accountKeys } from '../../../admin/keys.service.js';
import { SCOPES } from '../../../domain/scopes.js';
import type { KeyRecord } from '../../../store/repositories/api-key.repository.js';
import { positiveInt, print, printJson, withMeter, withStore } from '../../context.js';
import { table } from '../../table.js';

/** Why a key works or not, with the date that matters: an operator asks "since when?" next. */
function status(key: KeyRecord, now: number): string {
  if (key.revokedAt !== null) return `revoked ${key.revokedAt.slice(0, 10)}`;
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= now) return 'expired';
  return 'active';
}

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
    .option('--json', 'print the keys as a JSON array')
    .action(async (options: { account: string; json?: boolean }) => {
      const accountId = positiveInt('--account', options.account);
      await withStore(async (ctx) => {
        const { now } = ctx;
        const keys = await withMeter(ctx, (meter) => accountKeys(ctx.store, meter, accountId));
        if (options.json) return printJson(keys);
        if (keys.length === 0) return print(`Account ${accountId} has no keys.`);
        print(
          table(
            ['id', 'name', 'key', 'status', 'created', 'expires', 'last used (UTC)', 'scopes'],
            keys.map((k) => [
              String(k.id),
              k.name,
              `…${k.lastFour}`,
              status(k, now),
              k.createdAt.slice(0, 10),
              k.expiresAt?.slice(0, 10) ?? 'never',
              k.lastUsedAt?.replace('T', ' ').slice(0, 19) ?? 'never',
              scopes(k),
            ]),
            ['right'],
          ),
        );
        const active = keys.filter((k) => status(k, now) === 'active').length;
        print();
        print(`Account ${accountId}: ${keys.length} key${keys.length === 1 ? '' : 's'}, ${active} active.`);
      });
    });
}
