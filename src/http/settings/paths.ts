/** Every URL of the settings screen, in one place: routes register them, views link to them. */
import type { SecurityLogFilter } from '../../services/security-log.js';

export const SETTINGS_PREFIX = '/settings';
export const paths = {
  /** Redirects to the overview: the screen's home. */
  settings: '/settings',
  signIn: '/settings/sign-in',
  signOut: '/settings/sign-out',
  overview: '/settings/developer-api',
  newKey: '/settings/developer-api/keys/new',
  createKey: '/settings/developer-api/keys',
  createdKey: '/settings/developer-api/keys/created',
  key: (id: number) => `/settings/developer-api/keys/${id}`,
  renameKey: (id: number) => `/settings/developer-api/keys/${id}/name`,
  keyScopes: (id: number) => `/settings/developer-api/keys/${id}/scopes`,
  keyAddresses: (id: number) => `/settings/developer-api/keys/${id}/addresses`,
  rollKey: (id: number) => `/settings/developer-api/keys/${id}/roll`,
  revokeKey: (id: number) => `/settings/developer-api/keys/${id}/revoke`,
  replaceLeakedKey: (id: number) => `/settings/developer-api/keys/${id}/replace-leaked`,
  hideExpiryReminder: (id: number) => `/settings/developer-api/keys/${id}/hide-expiry-reminder`,
  keyUsageCsv: (id: number) => `/settings/developer-api/keys/${id}/usage.csv`,
  usageCsv: '/settings/developer-api/usage.csv',
  securityLog: '/settings/developer-api/security-log',
  securityLogCsv: '/settings/developer-api/security-log.csv',
  stylesheet: '/settings/assets/settings.css',
  script: '/settings/assets/settings.js',
  favicon: '/settings/assets/favicon.svg',
} as const;

/** The security log's page or download (`base`) for a filter and a page, as the views link to them. */
export function securityLogHref(base: string, filter: SecurityLogFilter, page = 1): string {
  const params = new URLSearchParams();
  if (filter.kind !== undefined) params.set('kind', filter.kind);
  if (filter.keyId !== undefined) params.set('key', String(filter.keyId));
  if (page > 1) params.set('page', String(page));
  const query = params.toString();
  return query === '' ? base : `${base}?${query}`;
}

/** What a key's page shows besides the key: the usage range, the request log's filter and page (absent: the defaults). */
export interface KeyPageQuery {
  range?: string;
  outcome?: string;
  page?: number;
}

/** Key details (`base`: its path) with a range, a log filter and a log page, to the section `anchor`: plain links, no script. */
export function keyPageHref(base: string, query: KeyPageQuery, anchor: string): string {
  const params = new URLSearchParams();
  if (query.range !== undefined) params.set('range', query.range);
  if (query.outcome !== undefined) params.set('outcome', query.outcome);
  if (query.page !== undefined && query.page > 1) params.set('page', String(query.page));
  const text = params.toString();
  return `${text === '' ? base : `${base}?${text}`}#${anchor}`;
}
