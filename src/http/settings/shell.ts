/** What the layout shows around a signed-in page: the account's email, the sign-out form's token, the tab. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { getAccount } from '../../store/repositories/account.repository.js';
import { PageError } from './page-errors.js';
import type { SettingsContext } from './settings-context.js';
import type { NavItem, SignedInShell } from './views/layout.js';

export async function shellFor(context: SettingsContext, request: FastifyRequest, reply: FastifyReply, current: NavItem): Promise<SignedInShell> {
  const session = request.settingsSession;
  if (session === null) throw new PageError('signed_out');
  const account = await getAccount(context.deps.store.db, session.accountId);
  if (account === undefined) throw new PageError('signed_out');
  // An error page of a POST has no token yet: make one so its sign-out form works.
  const formToken = request.formToken !== '' ? request.formToken : reply.generateCsrf({ userInfo: session.idHash });
  return { email: account.email, formToken, current };
}
