import { Command } from 'commander';
import { accountById } from '../../../services/accounts.service.js';
import { listSecurityEvents, SECURITY_EVENT_KINDS, SECURITY_LOG_PAGE_SIZE, securityLogFilter } from '../../../services/security-log.js';
import { positiveInt, print, printJson, withStore } from '../../context.js';
import { table } from '../../table.js';

const WHAT: Record<string, string> = {
  key_created: 'key created',
  key_renamed: 'key renamed',
  key_scopes_changed: 'scopes changed',
  key_addresses_changed: 'allowed addresses changed',
  key_rolled: 'key rolled',
  key_revoked: 'key revoked',
  signed_in: 'signed in',
  signed_out: 'signed out',
  plan_changed: 'plan changed',
};

export function accountsLogCommand(): Command {
  return new Command('log')
    .description(
      "the account's security log, newest first, 90 days: key and plan changes and sign-ins, who made them (owner or operator), when (UTC), from where",
    )
    .argument('<id>', 'account id')
    .option('--page <n>', `page, ${SECURITY_LOG_PAGE_SIZE} events each`, '1')
    .option('--kind <kind>', `only this kind of event: ${SECURITY_EVENT_KINDS.join(', ')}`)
    .option('--key <id>', "only the events of this key (one of the account's)")
    .option('--json', 'print { events: [{ id, at, kind, actor, address, key: { id, name, hint } | null, detail }], total, page, pageSize } as JSON')
    .action(async (id: string, options: { page: string; kind?: string; key?: string; json?: boolean }) => {
      const accountId = positiveInt('account id', id);
      const page = positiveInt('--page', options.page);
      const keyId = options.key === undefined ? undefined : positiveInt('--key', options.key);
      await withStore(async ({ store, now }) => {
        await accountById(store.db, accountId);
        const filter = await securityLogFilter(store, accountId, { kind: options.kind, keyId });
        const log = await listSecurityEvents(store, accountId, { page, now, filter });
        if (options.json) return printJson(log);
        const filtered = filter.kind !== undefined || filter.keyId !== undefined;
        if (log.total === 0) return print(`Account ${accountId} has no security events${filtered ? ' matching the filter' : ''} in the last 90 days.`);
        const pages = Math.max(1, Math.ceil(log.total / log.pageSize));
        if (log.events.length > 0) {
          print(
            table(
              ['when (UTC)', 'who', 'from', 'what', 'key', 'detail'],
              log.events.map((e) => [
                e.at.replace('T', ' ').slice(0, 19),
                e.actor,
                e.address ?? (e.actor === 'operator' ? 'command line' : '-'),
                WHAT[e.kind] ?? e.kind,
                e.key === null ? '-' : `${e.key.name} (${e.key.hint})`,
                e.detail ?? '',
              ]),
            ),
          );
          print();
        }
        print(`Page ${page} of ${pages}: ${log.total} event${log.total === 1 ? '' : 's'} in the last 90 days.`);
      });
    });
}
