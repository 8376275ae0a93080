/** The six scopes of the contract and the plan table. */
export const SCOPES = [
  'catalogue:read',
  'prices:read',
  'export',
  'collection:read',
  'marketplace:read',
  'transactions:read',
] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
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
