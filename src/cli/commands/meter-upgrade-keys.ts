import { Command } from 'commander';
import { InputError } from '../../errors/input-error.js';
import { upgradeRedisKeys } from '../../metering/redis-upgrade-keys.js';
import { print, printJson, withStore } from '../context.js';

export function meterUpgradeKeysCommand(): Command {
  return new Command('upgrade-keys')
    .description("move the Redis meter's counts from the key names of releases before Redis Cluster support (once, after upgrading)")
    .option('--json', 'print { quotas, keyDays, lastUses, unknownKeys } as JSON')
    .action(async (options: { json?: boolean }) => {
      await withStore(async (ctx) => {
        if (ctx.config.redisUrl === null) {
          throw new InputError('REDIS_URL is not set: only a single Redis can hold counts under the old key names');
        }
        const rows = await ctx.store.db.selectFrom('api_keys').select(['id', 'account_id']).execute();
        const accountOfKey = new Map(rows.map((r) => [Number(r.id), Number(r.account_id)]));
        const report = await upgradeRedisKeys(ctx.config.redisUrl, ctx.config.redisKeyPrefix, accountOfKey);
        if (options.json) return printJson(report);
        print(
          `Moved ${report.quotas} monthly count(s), ${report.keyDays} key-day count(s) and ${report.lastUses} last use(s)` +
            (report.unknownKeys > 0 ? `; left ${report.unknownKeys} of keys not in the store.` : '.'),
        );
      });
    });
}
