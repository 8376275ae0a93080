/** A key as the owner sees it in lists: name (a link to its details), hint, scopes, dates, status. */
import type { KeyStatus } from '../../../keys/key-status.js';
import { paths } from '../paths.js';
import { Time } from './components.js';

export interface KeyView {
  id: number;
  name: string;
  hint: string;
  scopes: readonly string[];
  /** Addresses and CIDR ranges the key may be used from; empty: any address. */
  allowedAddresses: readonly string[];
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  status: KeyStatus;
}

const STATUS_LABEL: Record<KeyStatus['status'], string> = {
  active: 'Active',
  expires_soon: 'Expires soon',
  retiring: 'Retiring',
  expired: 'Expired',
  revoked: 'Revoked',
};

export function StatusBadge({ status, now }: { status: KeyStatus; now: number }) {
  const when =
    status.at === null ? null : status.status === 'retiring' ? 'stops' : status.status === 'expires_soon' ? 'expires' : null;
  return (
    <span>
      <span class={`status status-${status.status}`}>{STATUS_LABEL[status.status]}</span>
      {when !== null && status.at !== null ? (
        <span class="small muted">
          {' '}
          {when} <Time at={status.at} now={now} exact />
        </span>
      ) : null}
    </span>
  );
}

export function ScopeList({ scopes }: { scopes: readonly string[] }) {
  return (
    <ul class="scopes" aria-label="Scopes">
      {scopes.map((s) => (
        <li>{s}</li>
      ))}
    </ul>
  );
}

/**
 * When the key stops or stopped working: a revoked key (or a rolled one past its stop time) by when it was
 * revoked, not by the expiry it never reached.
 */
export function KeyEnd({ keyView, now, exact = false }: { keyView: KeyView; now: number; exact?: boolean }) {
  const { status, at } = keyView.status;
  if (status === 'revoked' && at !== null) {
    return (
      <>
        Revoked <Time at={at} now={now} exact={exact} />
      </>
    );
  }
  if (keyView.expiresAt === null) return <>Never expires</>;
  return (
    <>
      {status === 'expired' ? 'Expired' : 'Expires'} <Time at={keyView.expiresAt} now={now} exact={exact} />
    </>
  );
}

export function KeyItem({ keyView, now }: { keyView: KeyView; now: number }) {
  return (
    <li class="key">
      <div>
        <a class="key-name" href={paths.key(keyView.id)}>
          {keyView.name}
        </a>
        <div class="mono small">{keyView.hint}</div>
      </div>
      <ScopeList scopes={keyView.scopes} />
      <div class="small">
        <div>
          Created <Time at={keyView.createdAt} now={now} />
        </div>
        <div>
          <KeyEnd keyView={keyView} now={now} />
        </div>
        <div>{keyView.lastUsedAt === null ? 'Never used' : <>Last used <Time at={keyView.lastUsedAt} now={now} /></>}</div>
      </div>
      <div>
        <StatusBadge status={keyView.status} now={now} />
      </div>
    </li>
  );
}
