import { Command } from 'commander';
import { accountKeys } from '../../../admin/keys.service.js';
import { positiveInt, print, printJson, withMeter, withStore } from '../../context.js';
import { table } from '../../table.js';

export function keysListCommand(): Command {
  return new Command('list')
    .description("list an account's keys (never the keys themselves: their last four characters)")
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print the keys as a JSON array')
    .action(async (options: { account: string; json?: boolean }) => {
      const accountId = positiveInt('--account', options.account);
      await withStore(async (ctx) => {
        const { now } = ctx;
        const keys = await withMeter(ctx, (meter) => accountKeys(ctx.store, meter, accountId));
        if (options.json) return printJson(keys);
        if (keys.length === 0) return print(`Account ${accountId} has no keys.`);
        const state = (k: (typeof keys)[number]) =>
          k.revokedAt !== null ? 'revoked' : k.expiresAt !== null && Date.parse(k.expiresAt) <= now ? 'expired' : 'active';
        print(
          table(
            ['id', 'name', 'key', 'state', 'scopes', 'created', 'expires', 'last used'],
            keys.map((k) => [
              String(k.id),
              k.name,
              `…${k.lastFour}`,
              state(k),
              k.scopes.join(',') || '(none)',
              k.createdAt.slice(0, 10),
              k.expiresAt?.slice(0, 10) ?? '-',
              k.lastUsedAt?.replace('T', ' ').slice(0, 19) ?? 'never',
            ]),
          ),
        );
      });
    });
}
