/**
 * The accounts and keys of a load, written by the services the command line and the settings screen use
 * (accounts.service.ts, new-key.ts), on the load's transaction: their rules hold for a file too.
 */
import { canonicalTimestamp } from '../domain/timestamps.js';
import type { Scope } from '../domain/scopes.js';
import { addAccount } from '../services/accounts.service.js';
import { loadKey } from '../services/new-key.js';
import { DatasetError, rowRule } from './dataset-error.js';
import { loadSection, type LoadContext } from './load-context.js';

/** How a refusal names the plan fields: as the file does. */
const FILE_FIELDS = { plan: 'plan', planStatus: 'planStatus' };

export async function loadAccounts(ctx: LoadContext): Promise<void> {
  await loadSection(
    ctx,
    'accounts',
    async (row, _n, where) => {
      const ref = row.ref as string;
      if (ctx.accountIds.has(ref)) throw new DatasetError(`${where}: ref '${ref}' appears twice`, { field: 'ref', value: ref });
      const account = {
        email: row.email as string,
        plan: row.plan as string,
        planStatus: row.planStatus as string | undefined,
        createdAt: ctx.nowIso,
      };
      // Rows of this file are in the transaction already: a second row with the same email is found too.
      const id = await rowRule(where, () => addAccount(ctx.trx, ctx.store.dialect, account, FILE_FIELDS));
      ctx.accountIds.set(ref, id);
      ctx.out.accounts[ref] = id;
    },
    { perRow: true },
  );
}

export async function loadKeys(ctx: LoadContext): Promise<void> {
  const refs = new Set<string>();
  await loadSection(
    ctx,
    'keys',
    async (row, _n, where) => {
      const ref = row.ref as string;
      if (refs.has(ref)) throw new DatasetError(`${where}: ref '${ref}' appears twice`, { field: 'ref', value: ref });
      refs.add(ref);
      const accountId = ctx.accountIdOf(where, 'account', row.account);
      const expiresAt = row.expiresAt == null ? null : canonicalTimestamp(row.expiresAt as string);
      const created = await rowRule(where, () =>
        loadKey(ctx.trx, {
          accountId,
          name: row.name as string,
          scopes: row.scopes as Scope[],
          expiresAt,
          revoked: row.revoked === true,
          now: ctx.now,
          keyPrefix: ctx.keyPrefix,
        }),
      );
      ctx.out.keys[ref] = created.key;
    },
    { perRow: true },
  );
}
