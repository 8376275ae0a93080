/**
 * The two one-time mechanisms of create and roll (post/redirect/get): a form nonce recorded at the first
 * submission, so a resubmitted form makes no second key; and the session's slot holding the new key,
 * sealed with the cookie, emptied by the page that shows it.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { openNewKey, sealNewKey } from '../../services/settings-auth/reveal.js';
import type { Session } from '../../services/settings-auth/sessions.js';
import type { Store } from '../../store/database.js';
import { InputError } from '../../errors/input-error.js';
import type { KeepNewKey } from '../../services/new-key.js';
import { paths } from './paths.js';
import { forgetFormUse, putReveal, recordFormUse, takeReveal } from '../../store/repositories/settings-auth.repository.js';
import { AccessChangeUnavailableError } from '../../metering/access-change.js';
import { SESSION_ABSOLUTE_MS } from '../../services/settings-auth/sessions.js';

/** A new key waits at most this long for its page; then it is gone, unseen. */
export const REVEAL_TTL_MS = 5 * 60_000;

export const newNonce = () => randomBytes(16).toString('hex');

/**
 * True the first time a nonce is submitted; false for a resubmission. A nonce is remembered as long as any
 * session lives (12 hours), and a form can only be posted within the session it was made for.
 */
export async function firstSubmission(store: Store, session: Session, nonce: string, now: number): Promise<boolean> {
  return recordFormUse(store.db, nonce, session.idHash, new Date(now).toISOString(), new Date(now - SESSION_ABSOLUTE_MS).toISOString());
}

/**
 * For a submission's failure: when it is a refusal by the access fence (nothing was written), forgets the
 * nonce, so that the same form sent again is a first submission; rethrows the error either way. Should the
 * nonce not be forgotten (the database went away too), the form answers "already submitted" and the owner
 * opens it anew.
 */
export function releasingSubmission(store: Store, session: Session, nonce: string): (error: unknown) => Promise<never> {
  return async (error) => {
    if (error instanceof AccessChangeUnavailableError) await forgetFormUse(store.db, nonce, session.idHash).catch(() => undefined);
    throw error;
  };
}

/**
 * Keeps a new key in the session's slot, on the transaction that makes it (new-key.ts, KeepNewKey).
 * While a key made before is still waiting to be shown (two tabs, two posts at once), the submission is
 * refused and makes nothing: every key made is the one its session is shown.
 */
export function keepNewKey(request: FastifyRequest, session: Session, now: number): KeepNewKey {
  const cookie = request.settingsCookie;
  if (cookie === null) throw new Error('settings: no session cookie to seal the new key with');
  return async (db, created) => {
    const reveal = { sessionHash: session.idHash, keyId: created.id, secret: sealNewKey(cookie, created.key), createdAt: new Date(now).toISOString() };
    if (!(await putReveal(db, reveal, new Date(now - REVEAL_TTL_MS).toISOString()))) {
      throw new InputError(
        `Another new key is waiting to be shown to you: open ${paths.createdKey} to copy it, then send this form again. Nothing was made.`,
      );
    }
  };
}

/** The waiting key, exactly once, and only within REVEAL_TTL_MS of its making. */
export async function takeNewKey(store: Store, request: FastifyRequest, session: Session, now: number): Promise<{ keyId: number; key: string } | null> {
  const cookie = request.settingsCookie;
  if (cookie === null) return null;
  const waiting = await takeReveal(store.db, session.idHash, new Date(now - REVEAL_TTL_MS).toISOString());
  if (waiting === undefined) return null;
  const key = openNewKey(cookie, waiting.secret);
  return key === null ? null : { keyId: waiting.keyId, key };
}
