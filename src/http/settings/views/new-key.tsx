/** The new key, shown once (after create or roll), or why it is no longer shown. */
import { paths } from '../paths.js';
import { Banner, Time } from './components.js';
import type { KeyView } from './key-summary.js';
import { ScopeList } from './key-summary.js';
import { Layout, type SignedInShell } from './layout.js';

export interface NewKeyData {
  now: number;
  key: string;
  record: KeyView;
  /** The API's /me URL on this site, for the ready curl line. */
  meUrl: string;
  /** After a roll: the key it replaces and when that one stops. */
  replaces: { id: number; name: string; hint: string; stopsAt: string | null } | null;
}

export function NewKeyPage({ shell, data }: { shell: SignedInShell; data: NewKeyData }) {
  const curl = `curl -H "X-API-Key: ${data.key}" ${data.meUrl}`;
  return (
    <Layout title="Your new key" shell={shell}>
      <h1>{data.replaces === null ? 'Key created' : 'Key rolled'}</h1>
      <Banner tone="warning">
        <p>
          <strong>Copy this key now: it is shown only once.</strong> We keep only a fingerprint of it, so nobody (not even us) can
          show it again. If you lose it, roll the key.
        </p>
      </Banner>
      <section class="card" aria-labelledby="key-heading">
        <h2 id="key-heading">{data.record.name}</h2>
        <code class="secret" id="new-key">
          {data.key}
        </code>
        <p class="actions">
          <button type="button" data-copy="new-key" hidden>
            Copy
          </button>
          <span id="new-key-status" role="status" class="copy-done" />
        </p>
        <ScopeList scopes={data.record.scopes} />
        <p class="small">
          {data.record.expiresAt === null ? 'Never expires.' : <>Expires <Time at={data.record.expiresAt} now={data.now} exact />.</>}
        </p>
        {data.replaces === null ? null : (
          <p>
            It replaces <span class="mono">{data.replaces.hint}</span>
            {data.replaces.stopsAt === null || Date.parse(data.replaces.stopsAt) <= data.now ? (
              ', which has stopped working.'
            ) : (
              <>
                , which keeps working until <Time at={data.replaces.stopsAt} now={data.now} exact />: switch your scripts before then.
              </>
            )}
          </p>
        )}
        <h3>Try it</h3>
        <pre class="snippet" id="curl-line">
          {curl}
        </pre>
        <p class="actions">
          <button type="button" data-copy="curl-line" hidden class="button-secondary">
            Copy the command
          </button>
          <span id="curl-line-status" role="status" class="copy-done" />
        </p>
      </section>
      <p>
        <a href={paths.key(data.record.id)}>See the key's details</a> · <a href={paths.overview}>Back to the overview</a>
      </p>
    </Layout>
  );
}

export function KeyGonePage({ shell }: { shell: SignedInShell }) {
  return (
    <Layout title="Key no longer shown" shell={shell}>
      <section class="message">
        <h1>This key is no longer shown</h1>
        <p>
          A new key is shown once, right after it is made. It was shown already (or not collected within 5 minutes), and it is
          not stored anywhere we could show it from. Nothing else was created.
        </p>
        <p>If you did not copy it, roll the key from its details page to get a replacement.</p>
        <p>
          <a href={paths.overview}>Back to the overview</a>
        </p>
      </section>
    </Layout>
  );
}
