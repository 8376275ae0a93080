/**
 * A key found public and revoked (src/services/leaked-keys.service.ts): the banner of the overview (every
 * such key not yet replaced) and of the key's page, each with its one-click replacement, a form posted with
 * the session's form token like every change.
 */
import type { KeyLeak } from '../../../services/leaked-key-replacement.js';
import { paths } from '../paths.js';
import { Banner, FormToken, Time } from './components.js';

function ReplaceForm({ leak, formToken }: { leak: KeyLeak; formToken: string }) {
  return (
    <form method="post" action={paths.replaceLeakedKey(leak.keyId)} class="actions">
      <FormToken token={formToken} />
      <button type="submit">Make a replacement for {leak.keyName}</button>
      <span class="hint">Same name, scopes and allowed addresses; the new key is shown once.</span>
    </form>
  );
}

/** Where it was found, as recorded: "found public at <url>; reported by <source>". */
const where = (detail: string) => detail.replace(/^revoked: /, '');

/** The overview's banner: the keys revoked for a leak and not replaced yet, newest first. */
export function LeaksBanner({ leaks, now, formToken }: { leaks: readonly KeyLeak[]; now: number; formToken: string }) {
  const open = leaks.filter((l) => l.replacedBy === null);
  if (open.length === 0) return null;
  return (
    <Banner tone="danger">
      <p>
        {open.length === 1 ? 'A key was' : `${open.length} keys were`} found public and revoked at once: scripts using{' '}
        {open.length === 1 ? 'it' : 'them'} are refused (401) until they use a replacement.
      </p>
      {open.map((leak) => (
        <div class="stack">
          <p>
            <a href={paths.key(leak.keyId)}>{leak.keyName}</a> <span class="mono">{leak.hint}</span>, revoked <Time at={leak.at} now={now} />:{' '}
            {where(leak.detail)}.
          </p>
          <ReplaceForm leak={leak} formToken={formToken} />
        </div>
      ))}
    </Banner>
  );
}

/** The key page's banner: why the key was revoked, and its replacement (made, or one click away). */
export function KeyLeakBanner({ leak, now, formToken }: { leak: KeyLeak; now: number; formToken: string }) {
  return (
    <Banner tone="danger">
      <p>
        This key was found public and revoked <Time at={leak.at} now={now} exact />: {where(leak.detail)}. Anyone could have used it;
        it is refused (401) from then on.
      </p>
      {leak.replacedBy === null ? (
        <ReplaceForm leak={leak} formToken={formToken} />
      ) : (
        <p>
          Replaced by <a href={paths.key(leak.replacedBy.id)}>{leak.replacedBy.name}</a>.
        </p>
      )}
    </Banner>
  );
}
