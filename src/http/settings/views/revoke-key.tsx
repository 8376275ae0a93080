/** Revoke: a confirmation that names the key and its last use. */
import { paths } from '../paths.js';
import { Banner, FormToken, Time } from './components.js';
import type { KeyView } from './key-summary.js';
import { Layout, type SignedInShell } from './layout.js';

export function RevokeKeyPage({ shell, now, keyView, error }: { shell: SignedInShell; now: number; keyView: KeyView; error: string | null }) {
  return (
    <Layout title={`Revoke ${keyView.name}`} shell={shell}>
      <p class="small">
        <a href={paths.key(keyView.id)}>← {keyView.name}</a>
      </p>
      <h1>Revoke key {keyView.name}?</h1>
      {error !== null ? (
        <Banner tone="danger">
          <p>{error}</p>
        </Banner>
      ) : null}
      <section class="card">
        <dl class="facts">
          <dt>Key</dt>
          <dd class="mono">{keyView.hint}</dd>
          <dt>Last used</dt>
          <dd>{keyView.lastUsedAt === null ? 'Never' : <Time at={keyView.lastUsedAt} now={now} exact />}</dd>
        </dl>
      </section>
      <p>
        Every request with this key is refused (401) from the next one, on every server. This cannot be undone: scripts using it
        need a new key.
      </p>
      <form method="post" action={paths.revokeKey(keyView.id)} class="actions">
        <FormToken token={shell.formToken} />
        <button type="submit" class="button-danger">
          Revoke key {keyView.name}
        </button>
        <a href={paths.key(keyView.id)}>Cancel</a>
      </form>
    </Layout>
  );
}
