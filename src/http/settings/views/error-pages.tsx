/** The page for each reason a request was not done; every one says what happened and what to do next. */
import type { VNode } from 'preact';
import { isKeyChange, UNAVAILABLE_AFTER_POST, type KeyChange, type PageError } from '../page-errors.js';
import { paths } from '../paths.js';
import type { SignedInShell } from './layout.js';
import { MessagePage } from './message-page.js';

/** What was not done, by the change refused: said first on its page. */
const NOT_MADE: Record<KeyChange, string> = {
  revoke: 'The key was not revoked: it still works.',
  roll: 'The key was not rolled: no new key was made, and the key works as before.',
  scopes: "The key's scopes were not changed.",
  addresses: "The key's allowed addresses were not changed.",
  rename: 'The key was not renamed.',
};

const AGAIN_FROM_PLATFORM = 'Open Settings → Developer API on the platform again: it signs you in here with a fresh link.';

/** For whoever runs shelfapi themselves (the local demo): where a fresh link comes from. */
function OperatorHint() {
  return (
    <p class="small muted">
      Running shelfapi yourself? <code>npx shelfapi accounts sign-in-link ACCOUNT_ID</code> prints a fresh link (the demo account is
      account 1, and <code>npm start</code> prints one for it).
    </p>
  );
}

export function errorPage(error: PageError, shell: SignedInShell | null, reauthMinutes: number): VNode {
  switch (error.kind) {
    case 'signed_out':
      return (
        <MessagePage title="You are signed out" shell={null}>
          <p>
            Your session here has ended: you signed out, or it was left unused for 2 hours, or you signed in more than 12 hours
            ago. Nothing was changed.
          </p>
          <p>{AGAIN_FROM_PLATFORM}</p>
          <OperatorHint />
        </MessagePage>
      );
    case 'link_refused':
      return (
        <MessagePage title="This sign-in link has expired or was already used" shell={null}>
          <p>A sign-in link works once, within 15 minutes of being made. You have not been signed in.</p>
          <p>{AGAIN_FROM_PLATFORM}</p>
          <OperatorHint />
        </MessagePage>
      );
    case 'reauth_required':
      return (
        <MessagePage title="Sign in again to make this change" shell={shell}>
          <p>
            Creating, rolling and revoking keys and changing their scopes need a sign-in within the last {reauthMinutes} minutes,
            so that a session left open cannot be used to take over your keys. Nothing was changed.
          </p>
          <p>{AGAIN_FROM_PLATFORM} Then make the change again.</p>
          <p>
            <a href={paths.overview}>Back to the overview</a>
          </p>
        </MessagePage>
      );
    case 'forbidden_request':
      return (
        <MessagePage title="This form could not be accepted" shell={shell}>
          <p>
            It came from another site, or its form token was missing or out of date (for example after you signed in again in
            another tab). Nothing was changed.
          </p>
          <p>Go back, reload the page, and try again.</p>
        </MessagePage>
      );
    case 'not_found':
      return (
        <MessagePage title="Not found" shell={shell}>
          <p>There is no such page, or no such key in your account.</p>
          <p>
            <a href={paths.overview}>Go to the overview</a>
          </p>
        </MessagePage>
      );
    case 'bad_request':
      return (
        <MessagePage title="This request could not be understood" shell={shell}>
          <p>Nothing was changed. Go back, reload the page, and try again.</p>
        </MessagePage>
      );
    case 'unavailable':
      return (
        <MessagePage title="Settings are temporarily unavailable" shell={null}>
          <p>We could not reach the service's data just now. Try again in a moment.</p>
          {error.message === UNAVAILABLE_AFTER_POST ? (
            <p>
              Your change may not have been made: check the <a href={paths.overview}>overview</a> before you send it again.
            </p>
          ) : null}
        </MessagePage>
      );
    case 'change_refused':
      // The access fence refused the change before anything was written (metering/access-change.ts): unlike
      // an outage in the middle of a change, it is known not to be made, so sending it again is safe.
      return (
        <MessagePage title="Your change was not made" shell={null}>
          <p>
            {isKeyChange(error.message) ? `${NOT_MADE[error.message]} ` : ''}Nothing was changed: key changes are temporarily unavailable,
            as every server must learn of a change before it is made, and that could not be done just now.
          </p>
          <p>
            Try again in a moment: it is safe to send it again (go back and send the same form), or start from the{' '}
            <a href={paths.overview}>overview</a>.
          </p>
        </MessagePage>
      );
    case 'unexpected':
      return (
        <MessagePage title="Something went wrong on our side" shell={shell}>
          <p>Nothing you did caused this, and it has been logged. Try again in a moment.</p>
        </MessagePage>
      );
  }
}
