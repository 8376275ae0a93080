/**
 * Why a settings request is answered with a plain page instead of what it asked for. The plugin's error
 * handler turns each into its page and status; nothing was changed when one is thrown.
 */
import { AccessChangeUnavailableError } from '../../metering/access-change.js';

export type PageErrorKind =
  | 'signed_out' // 401: no session, or it ended
  | 'link_refused' // 401: the sign-in link expired, was used, or is not valid
  | 'reauth_required' // 403: the change needs a sign-in within the reauthentication window
  | 'forbidden_request' // 403: foreign origin, or a missing or wrong form token
  | 'not_found' // 404: no such page, or a key that is not the owner's
  | 'bad_request' // 400: a request no form of ours sends
  | 'unavailable' // 503: a store is down or did not answer within the request's deadline (retry shortly)
  | 'change_refused' // 503: a key change refused before anything was written, Redis being away (retry shortly)
  | 'unexpected'; // 500: a fault of ours (logged)

const STATUS: Record<PageErrorKind, number> = {
  signed_out: 401,
  link_refused: 401,
  reauth_required: 403,
  forbidden_request: 403,
  not_found: 404,
  bad_request: 400,
  unavailable: 503,
  change_refused: 503,
  unexpected: 500,
};

export class PageError extends Error {
  readonly status: number;
  constructor(readonly kind: PageErrorKind, message: string = kind, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PageError';
    this.status = STATUS[kind];
  }
}

/** The message of an `unavailable` page error for a posted form, whose change may or may not have been made. */
export const UNAVAILABLE_AFTER_POST = 'posted';

/** The key changes whose refusal page names them (the message of a `change_refused` page error). */
export const KEY_CHANGES = ['revoke', 'roll', 'scopes', 'addresses', 'rename'] as const;
export type KeyChange = (typeof KEY_CHANGES)[number];

export function isKeyChange(value: string): value is KeyChange {
  return (KEY_CHANGES as readonly string[]).includes(value);
}

/**
 * Runs a key change of the services; a change refused by the access fence (PostgreSQL + Redis, Redis away:
 * metering/access-change.ts) becomes a `change_refused` page naming it. Such a refusal is known to have
 * written nothing, unlike an outage in the middle of a change, so the page can say so.
 */
export async function namingRefusal<T>(change: KeyChange, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AccessChangeUnavailableError) throw new PageError('change_refused', change, { cause: error });
    throw error;
  }
}
