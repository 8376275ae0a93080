/** Why the account may not make keys now, as the sentence the create and roll forms show; null when it may. */
import type { Store } from '../../store/database.js';
import { getAccount } from '../../store/repositories/account.repository.js';
import { PageError } from './page-errors.js';

export async function keyCreationRefusal(store: Store, accountId: number): Promise<string | null> {
  const account = await getAccount(store.db, accountId);
  if (account === undefined) throw new PageError('signed_out');
  if (account.plan === 'none') return 'This account has no Developer API plan, so it cannot create keys. Existing keys can be viewed and revoked.';
  if (account.planStatus !== 'active') {
    return 'Developer API access has lapsed: every key answers 403 until the plan is renewed, and no key can be created or rolled meanwhile. You can still view and revoke keys.';
  }
  return null;
}
