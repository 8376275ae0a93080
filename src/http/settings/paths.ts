/** Every URL of the settings screen, in one place: routes register them, views link to them. */
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
  rollKey: (id: number) => `/settings/developer-api/keys/${id}/roll`,
  revokeKey: (id: number) => `/settings/developer-api/keys/${id}/revoke`,
  securityLog: '/settings/developer-api/security-log',
  stylesheet: '/settings/assets/settings.css',
  script: '/settings/assets/settings.js',
  favicon: '/settings/assets/favicon.svg',
} as const;
