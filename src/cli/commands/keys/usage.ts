import { Command } from 'commander';
import { keyUsage } from '../../../admin/keys.service.js';
import { positiveInt, print, printJson, withMeter, withStore } from '../../context.js';
import { table } from '../../table.js';

export function keysUsageCommand(): Command {
  return new Command('usage')
    .description("a key's metered requests per UTC day, and its last use")
    .argument('<keyId>', 'key id')
    .option('--days <n>', 'days to show, today included', '30')
    .option('--json', 'print { key, days: [{ day, requests }], total } as JSON')
    .action(async (keyId: string, options: { days: string; json?: boolean }) => {
      const id = positiveInt('key id', keyId);
      const days = positiveInt('--days', options.days);
      await withStore(async (ctx) => {
        const report = await withMeter(ctx, (meter) => keyUsage(ctx.store, meter, id, ctx.now, days));
        if (options.json) return printJson(report);
        print(`Key ${report.key.id} (…${report.key.lastFour}, ${report.key.name}): ${report.total} requests in ${days} days; last used ${report.key.lastUsedAt ?? 'never'}.`);
        const peak = Math.max(1, ...report.days.map((d) => d.requests));
        print(
          table(
            ['day', 'requests', ''],
            report.days.map((d) => [d.day, String(d.requests), '█'.repeat(Math.round((d.requests / peak) * 30))]),
          ),
        );
      });
    });
}
