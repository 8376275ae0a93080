/** Create key: name, scopes (each with what it grants and its endpoints), expiry, allowed addresses; errors at their fields. */
import { MAX_LIVE_KEYS } from '../../../services/keys.service.js';
import { DEFAULT_EXPIRY } from '../../../services/key-expiry.js';
import { endpointLabel, SCOPE_TABLE, SCOPES, UNSCOPED_ENDPOINTS } from '../../../domain/scopes.js';
import { paths } from '../paths.js';
import { AddressesField } from './allowed-addresses.js';
import { Banner, FieldError, FormToken } from './components.js';
import { ExpiryChoices, type ExpiryValues } from './expiry-choices.js';
import { Layout, type SignedInShell } from './layout.js';

export interface FieldErrors {
  name?: string;
  scopes?: string;
  expiry?: string;
  addresses?: string;
  /** A problem not tied to one field (the live-key limit, a lapsed plan). */
  form?: string;
}

export interface CreateFormValues extends ExpiryValues {
  name: string;
  scopes: readonly string[];
  /** Allowed addresses as typed; empty: any address. */
  addresses: string;
}

export const EMPTY_CREATE_FORM: CreateFormValues = { name: '', scopes: [], expiry: DEFAULT_EXPIRY, expiryDate: '', addresses: '' };

export function ScopeChoices({ selected, error, idPrefix }: { selected: readonly string[]; error: string | undefined; idPrefix: string }) {
  return (
    <fieldset aria-describedby={error ? `${idPrefix}-error` : undefined}>
      <legend>Scopes</legend>
      <p class="hint">Choose at least one: what the key may read. Every key can also call {UNSCOPED_ENDPOINTS.map(endpointLabel).join(', ')}.</p>
      {SCOPES.map((scope) => {
        const id = `${idPrefix}-${scope.replace(':', '-')}`;
        return (
          <div class="choice">
            <input type="checkbox" id={id} name="scopes" value={scope} checked={selected.includes(scope)} aria-describedby={`${id}-hint`} />
            <label for={id}>{scope}</label>
            <p class="hint" id={`${id}-hint`}>
              {SCOPE_TABLE[scope].grants} <span class="mono">{SCOPE_TABLE[scope].endpoints.map(endpointLabel).join(', ')}</span>
            </p>
          </div>
        );
      })}
      <FieldError id={`${idPrefix}-error`} message={error} />
    </fieldset>
  );
}

export interface CreateKeyPageProps {
  shell: SignedInShell;
  now: number;
  /** Null when the account may create a key; otherwise why not (lapsed plan). */
  blocked: string | null;
  values: CreateFormValues;
  errors: FieldErrors;
  nonce: string;
  /** The owner's address as this request came (TRUST_PROXY rule). */
  clientAddress: string;
  /** Set when the allowed addresses leave the owner's own address out: the form asks to "Create anyway". */
  lockOutWarning?: string | null;
}

export function CreateKeyPage({ shell, now, blocked, values, errors, nonce, clientAddress, lockOutWarning = null }: CreateKeyPageProps) {
  return (
    <Layout title="Create key" shell={shell}>
      <h1>Create key</h1>
      {blocked !== null ? (
        <Banner tone="danger">
          <p>{blocked}</p>
          <p>
            <a href={paths.overview}>Back to the overview</a>
          </p>
        </Banner>
      ) : (
        <form method="post" action={paths.createKey} class="stack" novalidate>
          <FormToken token={shell.formToken} />
          <input type="hidden" name="nonce" value={nonce} />
          {errors.form ? (
            <Banner tone="danger">
              <p>{errors.form}</p>
            </Banner>
          ) : null}
          <div>
            <label for="name">Name</label>
            <p class="hint" id="name-hint">
              1 to 64 characters, different from your other working keys: say where the key is used ("price sync on the NAS").
            </p>
            <input
              type="text"
              id="name"
              name="name"
              value={values.name}
              autocomplete="off"
              aria-describedby={errors.name ? 'name-hint name-error' : 'name-hint'}
              aria-invalid={errors.name ? 'true' : undefined}
            />
            <FieldError id="name-error" message={errors.name} />
          </div>
          <ScopeChoices selected={values.scopes} error={errors.scopes} idPrefix="scope" />
          <ExpiryChoices now={now} values={values} error={errors.expiry} />
          <AddressesField
            idPrefix="addresses"
            value={values.addresses}
            clientAddress={clientAddress}
            error={errors.addresses}
            warning={lockOutWarning ?? undefined}
            described={['addresses-hint', errors.addresses ? 'addresses-error' : null, lockOutWarning ? 'addresses-warning' : null].filter((x) => x !== null).join(' ')}
          />
          <p class="hint">At most {MAX_LIVE_KEYS} working keys per account.</p>
          <div class="actions">
            {lockOutWarning ? (
              <button type="submit" name="lockout" value="accept" class="button-danger">
                Create anyway
              </button>
            ) : (
              <button type="submit">Create key</button>
            )}
            <a href={paths.overview}>Cancel</a>
          </div>
        </form>
      )}
    </Layout>
  );
}
