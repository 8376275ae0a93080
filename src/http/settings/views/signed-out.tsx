/** After "Sign out": the session is gone on every server; how to come back. */
import { MessagePage } from './message-page.js';

export function SignedOutPage() {
  return (
    <MessagePage title="You are signed out" shell={null}>
      <p>Your session has ended on every server. Your API keys keep working: signing out does not change them.</p>
      <p>
        To come back, open <strong>Settings → Developer API on the platform</strong>: it gives you a new sign-in link and signs you
        in here. A sign-in link works once, within 15 minutes.
      </p>
      <p class="small muted">
        Running shelfapi yourself? <code>shelfapi accounts sign-in-link ACCOUNT_ID</code> prints a new sign-in link for the
        account.
      </p>
    </MessagePage>
  );
}
