import { Command } from 'commander';
import { keyUsage } from '../../../services/key-lookup.js';
import { positiveInt, print, printJson, withMeter, withStore } from '../../context.js';
import { formatCount } from '../../progress.js';
import { table } from '../../table.js';
import { CHART_MAX_DAYS, usageChart } from '../../usage-chart.js';

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

export function keysUsageCommand(): Command {
  return new Command('usage')
    .description("a key's metered requests per UTC day ending today (a table, then a chart), and its last use")
    .argument('<keyId>', 'key id')
    .option('--days <n>', 'days to show, today included', '30')
    .option('--json', 'print { key, days: [{ day, requests }] (newest first), total } as JSON')
    .action(async (keyId: string, options: { days: string; json?: boolean }) => {
      const id = positiveInt('key id', keyId);
      const days = positiveInt('--days', options.days);
      await withStore(async (ctx) => {
        const report = await withMeter(ctx, (meter) => keyUsage(ctx.store, meter, id, ctx.now, days));
        if (options.json) return printJson(report);
        // Oldest first: the table then ends with today, and reads in the same direction as the chart.
        const series = [...report.days].reverse();
        const first = series[0]!.day;
        const last = series.at(-1)!.day;
        const { key } = report;
        print(
          `Key ${key.id} (…${key.lastFour}, ${key.name}, account ${key.accountId}): ${formatCount(report.total)} requests ` +
            `in ${days} UTC day${days === 1 ? '' : 's'}, ${first} to ${last}; last used ${key.lastUsedAt?.replace('T', ' ').slice(0, 19) ?? 'never'}${key.lastUsedAt ? ' UTC' : ''}.`,
        );
        print();
        print(
          table(
            ['day', 'weekday', 'requests'],
            series.map((d) => [d.day, WEEKDAYS[new Date(`${d.day}T00:00:00Z`).getUTCDay()]!, formatCount(d.requests)]),
            ['left', 'left', 'right'],
          ),
        );
        print();
        if (report.total === 0) return print(`No requests in these ${days} days.`);
        print(series.length > CHART_MAX_DAYS ? `Requests per day, the latest ${CHART_MAX_DAYS} days:` : 'Requests per day:');
        for (const line of usageChart(series)) print(line);
      });
    });
}
