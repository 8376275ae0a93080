/**
 * Roll: a new key with the same name and scopes; the owner chooses its expiry (the old key's lifetime, or as
 * at create) and when the old one stops.
 */
import { sameLifetime, STOP_OLD_CHOICES, type StopOld } from '../../../services/key-expiry.js';
import { paths } from '../paths.js';
import { Banner, FieldError, FormToken, Time } from './components.js';
import { ExpiryChoices, EXPIRY_SAME, type ExpiryValues } from './expiry-choices.js';
import type { KeyView } from './key-summary.js';
import { Layout, type SignedInShell } from './layout.js';

const STOP_LABELS: Record<StopOld, string> = {
  now: 'Now: the old key is refused from the next request',
  '1h': 'In 1 hour',
  '24h': 'In 24 hours',
  '7d': 'In 7 days',
};

/** What the roll form offers first: the old key's lifetime, as a roll did before it offered a choice. */
export const DEFAULT_ROLL_EXPIRY: ExpiryValues = { expiry: EXPIRY_SAME, expiryDate: '' };

export function RollKeyPage({
  shell,
  now,
  keyView,
  blocked,
  stopOld,
  expiry,
  error,
  expiryError,
  nonce,
}: {
  shell: SignedInShell;
  now: number;
  keyView: KeyView;
  blocked: string | null;
  stopOld: string;
  expiry: ExpiryValues;
  error: string | null;
  expiryError: string | null;
  nonce: string;
}) {
  return (
    <Layout title={`Roll ${keyView.name}`} shell={shell}>
      <p class="small">
        <a href={paths.key(keyView.id)}>← {keyView.name}</a>
      </p>
      <h1>Roll key {keyView.name}</h1>
      <p>
        Rolling makes a new key with the same name and scopes, expiring when you choose (
        {keyView.expiresAt === null ? 'by default never, as the old key' : 'by default after the same lifetime as the old key'}), shows
        it once, and stops the old key (<span class="mono">{keyView.hint}</span>) when you choose. Until then both work, so you can switch your scripts without a gap.
      </p>
      {blocked !== null ? (
        <Banner tone="danger">
          <p>{blocked}</p>
        </Banner>
      ) : (
        <form method="post" action={paths.rollKey(keyView.id)} class="stack">
          <FormToken token={shell.formToken} />
          <input type="hidden" name="nonce" value={nonce} />
          <fieldset aria-describedby={error ? 'stop-error' : undefined}>
            <legend>The old key stops</legend>
            {STOP_OLD_CHOICES.map((choice) => (
              <div class="choice">
                <input type="radio" id={`stop-${choice}`} name="stopOld" value={choice} checked={stopOld === choice} />
                <label for={`stop-${choice}`}>{STOP_LABELS[choice]}</label>
              </div>
            ))}
            <FieldError id="stop-error" message={error} />
          </fieldset>
          <ExpiryChoices now={now} values={expiry} error={expiryError} same={{ expiresAt: sameLifetime(keyView, now) }} />
          <p class="small muted">
            Last used: {keyView.lastUsedAt === null ? 'never' : <Time at={keyView.lastUsedAt} now={now} />}.
          </p>
          <div class="actions">
            <button type="submit">Roll key</button>
            <a href={paths.key(keyView.id)}>Cancel</a>
          </div>
        </form>
      )}
    </Layout>
  );
}
