/**
 * The six scopes of the contract (the README's "Keys, plans and scopes"; docs/contract.md, "Keys"), each
 * with what it grants, in the owner's words, and the endpoints it opens: the one table the routes take
 * their scope from, and the OpenAPI document and the settings screen describe the scopes from. Endpoints
 * are written as the routes are.
 */
export const SCOPE_TABLE = {
  'catalogue:read': { grants: 'Read the catalogue of items.', endpoints: ['/catalogue', '/catalogue/:id'] },
  'prices:read': { grants: 'Read current prices.', endpoints: ['/prices', '/prices/:masterItemId'] },
  export: { grants: 'Download all current prices as one CSV file.', endpoints: ['/prices/export.csv'] },
  'collection:read': {
    grants: "Read this account's collection and its value.",
    endpoints: ['/collection', '/collection/value', '/collection/:id'],
  },
  'marketplace:read': { grants: "Read this account's listings and the offers it made.", endpoints: ['/listings', '/offers'] },
  'transactions:read': { grants: "Read this account's purchases and sales.", endpoints: ['/transactions'] },
} as const satisfies Record<string, { grants: string; endpoints: readonly string[] }>;
export type Scope = keyof typeof SCOPE_TABLE;
export const SCOPES = Object.keys(SCOPE_TABLE) as readonly Scope[];

/** The endpoints any valid key may call, whatever its scopes. */
export const UNSCOPED_ENDPOINTS = ['/me'] as const;

/** Every endpoint of the API: a route whose path is not in the table does not type-check. */
export type Endpoint = (typeof SCOPE_TABLE)[Scope]['endpoints'][number] | (typeof UNSCOPED_ENDPOINTS)[number];

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

/** The scope an endpoint needs, or null for one that needs none. */
export function scopeOf(endpoint: Endpoint): Scope | null {
  return SCOPES.find((scope) => (SCOPE_TABLE[scope].endpoints as readonly string[]).includes(endpoint)) ?? null;
}

/** An endpoint as a client sees it, the OpenAPI way: `GET /catalogue/{id}`. */
export function endpointLabel(endpoint: Endpoint): string {
  return `GET ${endpoint.replace(/:(\w+)/g, '{$1}')}`;
}

export const PLANS = ['enthusiast', 'addon'] as const;
export type Plan = (typeof PLANS)[number];
export type AccountPlan = Plan | 'none';
export type PlanStatus = 'active' | 'lapsed';

export interface PlanLimits {
  monthly: number;
  perMinute: number;
}

export const DEFAULT_PLAN_LIMITS: Readonly<Record<Plan, PlanLimits>> = Object.freeze({
  enthusiast: { monthly: 50_000, perMinute: 120 },
  addon: { monthly: 10_000, perMinute: 60 },
});
