/** The demo's two accounts, 'demo' and its counterparty 'trader', and the demo key with every scope. */
import type { DatasetAccount, DatasetKey } from '../domain/dataset.js';
import { SCOPES } from '../domain/scopes.js';

export function demoAccounts(): DatasetAccount[] {
  return [
    { ref: 'demo', email: 'demo@shelfapi.dev', plan: 'enthusiast', planStatus: 'active' },
    { ref: 'trader', email: 'trader@shelfapi.dev', plan: 'addon', planStatus: 'active' },
  ];
}

export function demoKeys(): DatasetKey[] {
  return [{ ref: 'demo', account: 'demo', name: 'demo', scopes: [...SCOPES], expiresAt: null, revoked: false }];
}
