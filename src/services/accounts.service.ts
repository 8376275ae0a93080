/**
 * Operator actions on accounts: create one, change its plan (effective on its next request). The rules on
 * an account's email live here once, for every way an account is made (the CLI, `load`, the settings screen).
 */
import type { Kysely } from 'kysely';
import { isEmailAddress } from '../domain/email.js';
import type { Store } from '../store/database.js';
import type { Dialect } from '../store/dialect.js';
import { findAccountByEmail, getAccount, insertAccount, setPlan, type AccountRecord } from '../store/repositories/account.repository.js';
import type { Database } from '../store/schema.js';
import { withWriteTransaction } from '../store/write-transaction.js';
import { OPERATOR, type Actor } from './actor.js';
import { InputError, NotFoundError } from '../errors/input-error.js';
import { recordSecurityEvent } from './security-log.js';
import { withAccessChange } from '../metering/access-change.js';

/** Why `email` cannot be an account's email address, as a phrase ("must be ..."), or null when it can. */
export function emailProblem(email: string): string | null {
  return isEmailAddress(email) ? null : 'must be an email address';
}

/**
 * Refuses an email that an account already uses, compared regardless of (ASCII) case: `ALICE@example.com`
 * and `alice@example.com` are one mailbox to every mail system in practice. The database agrees (a unique
 * index on the lower-cased email), so two writers at once cannot both pass. `db` may be a transaction.
 */
export async function assertEmailFree(db: Kysely<Database>, dialect: Dialect, email: string): Promise<void> {
  if (await findAccountByEmail(db, dialect, email)) throw new InputError(`an account with email ${email} already exists`);
}

const PLAN_CHOICES = ['enthusiast', 'addon', 'none'];
const STATUS_CHOICES = ['active', 'lapsed'];

/** What the caller calls an account's plan and its status: the command line's options, or a file's fields. */
export interface PlanFieldNames {
  plan: string;
  planStatus: string;
}

const OPTION_NAMES: PlanFieldNames = { plan: '--plan', planStatus: '--plan-status' };

function planStatusFor(plan: string, planStatus: string | undefined, names: PlanFieldNames = OPTION_NAMES): string | null {
  if (!PLAN_CHOICES.includes(plan)) throw new InputError(`${names.plan} must be one of ${PLAN_CHOICES.join(', ')}`);
  if (planStatus !== undefined && !STATUS_CHOICES.includes(planStatus)) {
    throw new InputError(`${names.planStatus} must be one of ${STATUS_CHOICES.join(', ')}`);
  }
  if (plan === 'none') {
    if (planStatus !== undefined) throw new InputError(`${names.planStatus} does not apply to ${names.plan} none`);
    return null;
  }
  return planStatus ?? 'active';
}

/**
 * Writes a new account on `db`, which may be the caller's transaction (`load` writes a whole file in one),
 * after the plan and email-in-use rules; the email's form is the caller's to check first. Returns its id.
 */
export async function addAccount(
  db: Kysely<Database>,
  dialect: Dialect,
  input: { email: string; plan: string; planStatus?: string; createdAt: string },
  names: PlanFieldNames = OPTION_NAMES,
): Promise<number> {
  const planStatus = planStatusFor(input.plan, input.planStatus, names);
  await assertEmailFree(db, dialect, input.email);
  return insertAccount(db, { email: input.email, plan: input.plan, planStatus, createdAt: input.createdAt });
}

export async function createAccount(
  store: Store,
  input: { email: string; plan: string; planStatus?: string; now: number },
): Promise<AccountRecord> {
  const problem = emailProblem(input.email);
  if (problem !== null) throw new InputError(`--email: ${JSON.stringify(input.email)} ${problem}`);
  const { email, plan, planStatus } = input;
  const id = await addAccount(store.db, store.dialect, { email, plan, planStatus, createdAt: new Date(input.now).toISOString() });
  return accountById(store.db, id);
}

/** The account, or NotFoundError. `db` may be a transaction. */
export async function accountById(db: Kysely<Database>, accountId: number): Promise<AccountRecord> {
  const account = await getAccount(db, accountId);
  if (!account) throw new NotFoundError(`account ${accountId} does not exist`);
  return account;
}

const describePlan = (plan: string, status: string | null) => (status === null ? plan : `${plan} (${status})`);

/**
 * Changes an account's plan (effective on its next request) and writes it to the owner's security log.
 * Only operators change plans today; `actor` and `now` default to the command line and the system clock.
 */
export async function changePlan(
  store: Store,
  input: { accountId: number; plan: string; planStatus?: string; actor?: Actor; now?: number },
): Promise<AccountRecord> {
  const planStatus = planStatusFor(input.plan, input.planStatus);
  // Every server learns of the change before this returns (metering/access-change.ts).
  return withAccessChange(store, input.accountId, () => withWriteTransaction(store, async (db) => {
    const before = await accountById(db, input.accountId);
    await setPlan(db, input.accountId, input.plan, planStatus);
    if (before.plan !== input.plan || before.planStatus !== planStatus) {
      await recordSecurityEvent(db, {
        accountId: input.accountId,
        kind: 'plan_changed',
        actor: input.actor ?? OPERATOR,
        at: input.now ?? Date.now(),
        detail: `plan from ${describePlan(before.plan, before.planStatus)} to ${describePlan(input.plan, planStatus)}`,
      });
    }
    return accountById(db, input.accountId);
  }));
}
