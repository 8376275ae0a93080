/**
 * Why a settings request is answered with a plain page instead of what it asked for. The plugin's error
 * handler turns each into its page and status; nothing was changed when one is thrown.
 */
export type PageErrorKind =
  | 'signed_out' // 401: no session, or it ended
  | 'link_refused' // 401: the sign-in link expired, was used, or is not valid
  | 'reauth_required' // 403: the change needs a sign-in within the reauthentication window
  | 'forbidden_request' // 403: foreign origin, or a missing or wrong form token
  | 'not_found' // 404: no such page, or a key that is not the owner's
  | 'bad_request' // 400: a request no form of ours sends
  | 'unavailable' // 503: a store is down or did not answer within the request's deadline (retry shortly)
  | 'unexpected'; // 500: a fault of ours (logged)

const STATUS: Record<PageErrorKind, number> = {
  signed_out: 401,
  link_refused: 401,
  reauth_required: 403,
  forbidden_request: 403,
  not_found: 404,
  bad_request: 400,
  unavailable: 503,
  unexpected: 500,
};

export class PageError extends Error {
  readonly status: number;
  constructor(readonly kind: PageErrorKind, message: string = kind) {
    super(message);
    this.name = 'PageError';
    this.status = STATUS[kind];
  }
}

/** The message of an `unavailable` page error for a posted form, whose change may or may not have been made. */
export const UNAVAILABLE_AFTER_POST = 'posted';
