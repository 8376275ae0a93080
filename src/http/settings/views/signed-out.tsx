/** After "Sign out": the session is gone on every server. */
import { MessagePage } from './message-page.js';

export function SignedOutPage() {
  return (
    <MessagePage title="You are signed out" shell={null}>
      <p>Your session has ended on every server. Your API keys keep working: signing out does not change them.</p>
      <p>To come back, open Settings → Developer API on the platform.</p>
    </MessagePage>
  );
}
