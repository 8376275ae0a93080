/** What each scope grants, in the owner's words, and the endpoints it opens (the create and details forms show it). */
import type { Scope } from '../../domain/scopes.js';

export const SCOPE_HELP: Readonly<Record<Scope, { grants: string; endpoints: readonly string[] }>> = {
  'catalogue:read': { grants: 'Read the catalogue of items.', endpoints: ['GET /catalogue', 'GET /catalogue/{id}'] },
  'prices:read': { grants: 'Read current prices and price history.', endpoints: ['GET /prices', 'GET /prices/{masterItemId}'] },
  export: { grants: 'Download all current prices as one CSV file.', endpoints: ['GET /prices/export.csv'] },
  'collection:read': {
    grants: "Read this account's collection and its value.",
    endpoints: ['GET /collection', 'GET /collection/value', 'GET /collection/{id}'],
  },
  'marketplace:read': { grants: "Read this account's listings and the offers on them.", endpoints: ['GET /listings', 'GET /offers'] },
  'transactions:read': { grants: "Read this account's purchases and sales.", endpoints: ['GET /transactions'] },
};
