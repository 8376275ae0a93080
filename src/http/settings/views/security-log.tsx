/** Security log: who changed what, when, from where; 90 days, newest first, paged. */
import { SECURITY_EVENT_KINDS, type SecurityEvent, type SecurityEventKey, type SecurityEventKind, type SecurityLogFilter } from '../../../services/security-log.js';
import { paths, securityLogHref } from '../paths.js';
import { FilterSelect, Pager, TableScroll, Time } from './components.js';
import { Layout, type SignedInShell } from './layout.js';

const KIND_LABELS: Record<SecurityEventKind, string> = {
  key_created: 'Key created',
  key_renamed: 'Key renamed',
  key_scopes_changed: 'Scopes changed',
  key_addresses_changed: 'Allowed addresses changed',
  key_rolled: 'Key rolled',
  key_revoked: 'Key revoked',
  signed_in: 'Signed in',
  signed_out: 'Signed out',
  plan_changed: 'Plan changed',
};

export interface SecurityLogData {
  now: number;
  events: readonly SecurityEvent[];
  page: number;
  pages: number;
  total: number;
  filter: SecurityLogFilter;
  /** The keys the log names, for the key filter. */
  keys: readonly SecurityEventKey[];
}

/** The filter form: a plain GET form, so it works without JavaScript and its URL can be bookmarked. */
function FilterForm({ data }: { data: SecurityLogData }) {
  const kinds = SECURITY_EVENT_KINDS.map((kind) => ({ value: kind, label: KIND_LABELS[kind] }));
  const keys = data.keys.map((k) => ({ value: String(k.id), label: `${k.name} (${k.hint})` }));
  const keyId = data.filter.keyId === undefined ? null : String(data.filter.keyId);
  return (
    <form method="get" action={paths.securityLog} class="filters" aria-label="Filter the security log">
      <div class="field">
        <FilterSelect id="kind" name="kind" label="Event" allLabel="All events" options={kinds} selected={data.filter.kind ?? null} />
      </div>
      <div class="field">
        <FilterSelect id="key" name="key" label="Key" allLabel="All keys" options={keys} selected={keyId} />
      </div>
      <div class="actions">
        <button type="submit" class="button-secondary">
          Filter
        </button>
        <a href={securityLogHref(paths.securityLogCsv, data.filter)} download>
          Download CSV
        </a>
      </div>
    </form>
  );
}

export function SecurityLogPage({ shell, data }: { shell: SignedInShell; data: SecurityLogData }) {
  const filtered = data.filter.kind !== undefined || data.filter.keyId !== undefined;
  return (
    <Layout title="Security log" shell={shell}>
      <h1>Security log</h1>
      <p class="muted">Changes to your keys and plan, and sign-ins, over the last 90 days. Newest first.</p>
      <FilterForm data={data} />
      {data.events.length === 0 ? (
        filtered ? (
          <p>
            No event matches this filter in the last 90 days. <a href={paths.securityLog}>Show every event</a>
          </p>
        ) : (
          <p>Nothing happened in the last 90 days.</p>
        )
      ) : (
        <TableScroll label="Security events" card>
          <table>
            <caption class="visually-hidden">
              Security events, page {data.page} of {data.pages}, {data.total} in all
            </caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">What</th>
                <th scope="col">Key</th>
                <th scope="col">Who</th>
              </tr>
            </thead>
            <tbody>
              {data.events.map((e) => (
                <tr>
                  <td>
                    <Time at={e.at} now={data.now} exact />
                  </td>
                  <td>
                    <strong>{KIND_LABELS[e.kind]}</strong>
                    {e.detail === null ? null : <div class="small muted">{e.detail}</div>}
                  </td>
                  <td>
                    {e.key === null ? (
                      <span class="muted">—</span>
                    ) : (
                      <>
                        <a href={paths.key(e.key.id)}>{e.key.name}</a>
                        <div class="mono small">{e.key.hint}</div>
                      </>
                    )}
                  </td>
                  <td>
                    {e.actor === 'owner' ? 'You, on this screen' : e.actor === 'secret_scanning' ? 'GitHub secret scanning' : 'An operator (command line)'}
                    {e.address === null ? null : <div class="mono small">{e.address}</div>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      <Pager label="Pages of the security log" page={data.page} pages={data.pages} href={(page) => securityLogHref(paths.securityLog, data.filter, page)} />
    </Layout>
  );
}
