/** Operator actions on accounts: create one, change its plan (effective on its next request). */
import type { Store } from '../store/database.js';
import { findAccountByEmail, getAccount, insertAccount, setPlan, type AccountRecord } from '../store/repositories/account.repository.js';
import { InputError } from './input-error.js';

const PLAN_CHOICES = ['enthusiast', 'addon', 'none'];
const STATUS_CHOICES = ['active', 'lapsed'];

function planStatusFor(plan: string, planStatus: string | undefined): string | null {
  if (!PLAN_CHOICES.includes(plan)) throw new InputError(`--plan must be one of ${PLAN_CHOICES.join(', ')}`);
  if (planStatus !== undefined && !STATUS_CHOICES.includes(planStatus)) {
    throw new InputError(`--plan-status must be one of ${STATUS_CHOICES.join(', ')}`);
  }
  if (plan === 'none') {
    if (planStatus !== undefined) throw new InputError('--plan-status does not apply to --plan none');
    return null;
  }
  return planStatus ?? 'active';
}

export async function createAccount(
  store: Store,
  input: { email: string; plan: string; planStatus?: string; now: number },
): Promise<AccountRecord> {
  if (!/^[^\s@]+@[^\s@]+$/.test(input.email)) throw new InputError(`--email: ${JSON.stringify(input.email)} is not an email address`);
  const planStatus = planStatusFor(input.plan, input.planStatus);
  if (await findAccountByEmail(store.db, input.email)) throw new InputError(`an account with email ${input.email} already exists`);
  const id = await insertAccount(store.db, {
    email: input.email,
    plan: input.plan,
    planStatus,
    createdAt: new Date(input.now).toISOString(),
  });
  return (await getAccount(store.db, id))!;
}

export async function changePlan(store: Store, input: { accountId: number; plan: string; planStatus?: string }): Promise<AccountRecord> {
  const planStatus = planStatusFor(input.plan, input.planStatus);
  if (!(await setPlan(store.db, input.accountId, input.plan, planStatus))) {
    throw new InputError(`account ${input.accountId} does not exist`);
  }
  return (await getAccount(store.db, input.accountId))!;
}
