import { Command } from 'commander';
import { createUsageStats } from '../../usage-stats/create-usage-stats.js';
import { ackNotices, pendingNotices, refreshNotices } from '../../services/notices.service.js';
import { positiveInt, print, printJson, withMeter, withStore } from '../context.js';
import { table } from '../table.js';

const WHAT: Record<string, string> = {
  key_expiring_7d: 'key expires within 7 days',
  key_expiring_1d: 'key expires within a day',
  key_expired: 'key expired',
  quota_80: '80% of the month used',
  quota_100: 'month used up',
  key_new_address: 'key used from a new address',
  key_leaked: 'key found public and revoked',
};

export function noticesCommand(): Command {
  return new Command('notices')
    .description(
      'what owners should hear about, for the platform to mail: keys expiring within 7 days and within a day, keys that expired, ' +
        "accounts at 80% and 100% of the month's quota, keys used from a new address, keys found public and revoked (mail these at once); each listed until acknowledged with --ack, and found only once",
    )
    .option('--json', 'print { notices: [{ id, kind, account: { id, email }, key: { id, name, hint } | null, at, detail, createdAt }] } as JSON')
    .option('--ack <ids...>', 'mark these notices sent (all or none: an unknown id acknowledges nothing)')
    .action(async (options: { json?: boolean; ack?: string[] }) => {
      const ids = options.ack?.map((raw) => positiveInt('--ack', raw));
      await withStore(async (ctx) => {
        if (ids !== undefined) {
          const result = await ackNotices(ctx.store, ids, ctx.now);
          if (options.json) return printJson(result);
          return print(
            `Acknowledged ${result.acked.length} notice${result.acked.length === 1 ? '' : 's'}` +
              (result.already.length > 0 ? `; ${result.already.join(', ')} had been already.` : '.'),
          );
        }
        await withMeter(ctx, async (meter) => {
          // The request logs (for new addresses) are in the owners' statistics: the database, or Redis.
          const stats = await createUsageStats(ctx.config, ctx.store);
          try {
            await refreshNotices(ctx.store, meter, { now: ctx.now, planLimits: ctx.config.planLimits, stats });
          } finally {
            await stats.close();
          }
        });
        const notices = await pendingNotices(ctx.store, ctx.config.keyPrefix);
        if (options.json) return printJson({ notices });
        if (notices.length === 0) return print('No notices to send.');
        print(
          table(
            ['id', 'what', 'account', 'email', 'key', 'detail'],
            notices.map((n) => [String(n.id), WHAT[n.kind] ?? n.kind, String(n.account.id), n.account.email, n.key === null ? '-' : `${n.key.name} (${n.key.hint})`, n.detail]),
          ),
        );
        print();
        print(`${notices.length} notice${notices.length === 1 ? '' : 's'} to send; then: shelfapi notices --ack ${notices.map((n) => n.id).join(' ')}`);
      });
    });
}
