/**
 * Key details: everything the overview shows of the key, plus rename, scopes, allowed addresses, the last
 * use and its address; the route adds the key's usage (one chart) and its request log (one table).
 */
import type { ComponentChildren } from 'preact';
import type { LastUse, Outcome } from '../../../usage-stats/usage-stats.js';
import { paths } from '../paths.js';
import { AddressList, AllowedAddressesForm, type AddressesFormState } from './allowed-addresses.js';
import { Banner, FieldError, FormToken, KeyChangeActions, Time } from './components.js';
import { ScopeChoices } from './create-key.js';
import { ScopeList, StatusBadge, type KeyView } from './key-summary.js';
import { Layout, type SignedInShell } from './layout.js';
import { KeyLeakBanner } from './leak-banner.js';
import type { KeyLeak } from '../../../services/leaked-key-replacement.js';

/** What each outcome is called on the pages (the outcomes and their order are usage-stats.ts's). */
export const OUTCOME_LABELS: Readonly<Record<Outcome, string>> = {
  counted: 'Counted',
  not_modified: 'Not modified (304)',
  bad_request: 'Bad request (400)',
  insufficient_scope: 'Insufficient scope (403)',
  rate_limited: 'Rate limited (429)',
  quota_exceeded: 'Quota exceeded (429)',
  server_error: 'Server error (5xx)',
  revoked_or_expired: 'After revoke or expiry (401)',
  refused_address: 'Refused address (401)',
};

export interface KeyDetailsData {
  now: number;
  /** The owner's address as this request came (TRUST_PROXY rule): the lock-out warning is about it. */
  clientAddress: string;
  key: KeyView;
  lastUse: LastUse | null;
  /** The key it was rolled into, if any. */
  replacedBy: { id: number; name: string } | null;
  /** Its revocation for a leak (found public), if it was. */
  leak?: KeyLeak | null;
}

export interface KeyDetailsForm {
  name?: { value: string; error: string };
  scopes?: { values: readonly string[]; error: string };
  /** The allowed addresses as typed, refused (error) or waiting for "Save anyway" (warning). */
  addresses?: AddressesFormState;
  /** A message about the key as a whole (it was revoked meanwhile, ...). */
  key?: string;
}

export function KeyDetailsPage({
  shell,
  data,
  form,
  notice,
  children,
}: {
  shell: SignedInShell;
  data: KeyDetailsData;
  form: KeyDetailsForm;
  notice: string | null;
  /** Sections of their own after the page's (usage in depth, the request log), composed by the route. */
  children?: ComponentChildren;
}) {
  const { key, now } = data;
  const working = key.status.status !== 'expired' && key.status.status !== 'revoked';
  const rollable = working && key.status.status !== 'retiring';
  return (
    <Layout title={`Key ${key.name}`} shell={shell} notice={notice}>
      <p class="small">
        <a href={paths.overview}>← Overview</a>
      </p>
      <h1>{key.name}</h1>
      {data.leak ? <KeyLeakBanner leak={data.leak} now={now} formToken={shell.formToken} /> : null}
      {form.key ? (
        <Banner tone="danger">
          <p>{form.key}</p>
        </Banner>
      ) : null}
      <div class="grid grid-2">
        <section class="card" aria-labelledby="about-heading">
          <h2 id="about-heading">About this key</h2>
          <dl class="facts">
            <dt>Key</dt>
            <dd class="mono">{key.hint}</dd>
            <dt>Status</dt>
            <dd>
              <StatusBadge status={key.status} now={now} />
            </dd>
            <dt>Scopes</dt>
            <dd>{key.scopes.length === 0 ? 'None (only /me)' : <ScopeList scopes={key.scopes} />}</dd>
            <dt>Allowed addresses</dt>
            <dd>{key.allowedAddresses.length === 0 ? 'Any address' : <AddressList addresses={key.allowedAddresses} />}</dd>
            <dt>Created</dt>
            <dd>
              <Time at={key.createdAt} now={now} exact />
            </dd>
            {key.status.status === 'revoked' && key.status.at !== null ? (
              <>
                <dt>Revoked</dt>
                <dd>
                  <Time at={key.status.at} now={now} exact />
                </dd>
              </>
            ) : (
              <>
                <dt>{key.status.status === 'expired' ? 'Expired' : 'Expires'}</dt>
                <dd>{key.expiresAt === null ? 'Never' : <Time at={key.expiresAt} now={now} exact />}</dd>
              </>
            )}
            <dt>Last used</dt>
            <dd>
              {data.lastUse === null ? (
                'Never'
              ) : (
                <>
                  <Time at={data.lastUse.at} now={now} exact />
                  {data.lastUse.address === null ? null : (
                    <>
                      {' '}
                      from <span class="mono">{data.lastUse.address}</span>
                    </>
                  )}
                </>
              )}
            </dd>
            {data.replacedBy === null ? null : (
              <>
                <dt>Replaced by</dt>
                <dd>
                  <a href={paths.key(data.replacedBy.id)}>{data.replacedBy.name}</a>
                </dd>
              </>
            )}
          </dl>
          {working ? (
            <p class="actions">
              {rollable ? (
                <a class="button button-secondary" href={paths.rollKey(key.id)}>
                  Roll
                </a>
              ) : null}
              <a class="button button-danger" href={paths.revokeKey(key.id)}>
                Revoke
              </a>
            </p>
          ) : null}
        </section>
        {working ? (
          <section class="card" aria-labelledby="change-heading">
            <h2 id="change-heading">Change</h2>
            {/* Folded until asked for (the page stays short); open when a form comes back with a message. */}
            <details class="change" open={form.name !== undefined || form.scopes !== undefined || form.addresses !== undefined}>
              <summary>Rename, allowed addresses, scopes</summary>
              <form method="post" action={paths.renameKey(key.id)} class="stack">
                <FormToken token={shell.formToken} />
                <div>
                  <label for="name">Name</label>
                  <input
                    type="text"
                    id="name"
                    name="name"
                    value={form.name?.value ?? key.name}
                    autocomplete="off"
                    aria-invalid={form.name ? 'true' : undefined}
                    aria-describedby={form.name ? 'name-error' : undefined}
                  />
                  <FieldError id="name-error" message={form.name?.error} />
                </div>
                <div class="actions">
                  <button type="submit" class="button-secondary">
                    Rename
                  </button>
                </div>
              </form>
              <AllowedAddressesForm keyId={key.id} formToken={shell.formToken} current={key.allowedAddresses} clientAddress={data.clientAddress} form={form.addresses} />
              <form method="post" action={paths.keyScopes(key.id)} class="stack">
                <FormToken token={shell.formToken} />
                <ScopeChoices selected={form.scopes?.values ?? key.scopes} error={form.scopes?.error} idPrefix="scope" />
                <KeyChangeActions>
                  <button type="submit" class="button-secondary">
                    Save scopes
                  </button>
                </KeyChangeActions>
              </form>
            </details>
          </section>
        ) : null}
      </div>
      {children}
    </Layout>
  );
}
