import { Command } from 'commander';
import { systemClock } from '../../clock.js';
import { loadConfig } from '../../config.js';
import { copyStore, type CopyReport } from '../../copy-store/copy-store.js';
import { InputError } from '../../errors/input-error.js';
import { redisTargetOf, type RedisTarget } from '../../metering/redis-client.js';
import { print, printJson } from '../context.js';
import { formatCount, withProgress } from '../progress.js';
import { table } from '../table.js';

interface Options {
  from: string;
  to: string;
  /** A URL from --redis, false from --no-redis, undefined for neither (REDIS_URL or REDIS_CLUSTER_URLS decide). */
  redis?: string | false;
  json?: boolean;
}

function redisOf(option: string | false | undefined): RedisTarget | null {
  if (option === false) return null;
  if (option === undefined) return redisTargetOf(loadConfig());
  if (!/^rediss?:\/\//.test(option)) throw new InputError('--redis must be a redis:// or rediss:// URL');
  return option;
}

function printReport(report: CopyReport): void {
  print(`Copied into ${report.target} (schema ${report.schema}):`);
  print(table(['table', 'rows'], Object.entries(report.tables).map(([name, n]) => [name, formatCount(n)]), ['left', 'right']));
  const m = report.meter;
  print(
    `From the SQLite meter's own rows: ${m.monthCounts} month count(s), ${m.dayCounts} key-day count(s), ` +
      `${m.lastUses} later last use(s), ${m.burstTimes} request(s) of the last minute's burst windows.`,
  );
  if (report.redis !== null) {
    const r = report.redis;
    print(
      `Redis (prefix ${r.prefix}): ${r.monthCounts} month count(s), ${r.dayCounts} key-day count(s), ${r.lastUses} last use(s), ` +
        `${r.burstTimes} burst time(s), statistics of ${r.statsKeys} key(s).`,
    );
  }
  for (const [name, reason] of Object.entries(report.skipped)) print(`Not copied: ${name}: ${reason}.`);
}

export function copyStoreCommand(): Command {
  return new Command('copy-store')
    .description('copy an SQLite store into an empty PostgreSQL store (and the month\'s counts into Redis when REDIS_URL is set); all or nothing')
    .requiredOption('--from <path>', 'the SQLite store file (read only, never changed)')
    .requiredOption('--to <url>', 'postgres://... of an empty database (its schema: the first of search_path), made if missing and the role may; migrated first')
    .option('--redis <url>', "copy the meter's counts into this Redis (default: REDIS_URL or REDIS_CLUSTER_URLS), under REDIS_KEY_PREFIX")
    .option('--no-redis', 'copy no counts into Redis, even with REDIS_URL set')
    .option('--json', 'print { target, schema, tables: {table: rows}, skipped, meter, redis, createdDatabase } as JSON')
    .action(async (options: Options) => {
      const target = redisOf(options.redis);
      const config = loadConfig();
      const report = await withProgress({ label: 'copy-store', quiet: options.json === true }, (progress) =>
        copyStore({
          from: options.from,
          to: options.to,
          redis: target === null ? null : { target, prefix: config.redisKeyPrefix },
          now: systemClock.now(),
          progress,
          // Said at once (the copy may take minutes); with --json it is the report's createdDatabase.
          onCreatedDatabase: (database) => {
            if (options.json !== true) process.stderr.write(`shelfapi: created database ${database} (it did not exist)\n`);
          },
        }),
      );
      if (options.json) printJson(report);
      else printReport(report);
    });
}
