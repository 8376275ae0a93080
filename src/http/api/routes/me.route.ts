/** GET /me: the key's plan, scopes, limits and this month's usage. Subject to the burst limit, never to the quota. */
import { Type, type Static } from 'typebox';
import { SCOPES } from '../../../domain/scopes.js';
import { periodOf } from '../../../metering/periods.js';
import type { App } from '../../app-types.js';
import type { RouteDeps } from './route-deps.js';
import { quotaRemaining } from '../rate-limit-headers.js';
import { defineRoute } from './define-route.js';

export const MeResponseSchema = Type.Object(
  {
    plan: Type.Union([Type.Literal('enthusiast'), Type.Literal('addon')]),
    scopes: Type.Array(Type.String(), { description: 'Scopes granted to the presented key' }),
    limits: Type.Object({ monthly: Type.Integer(), perMinute: Type.Integer() }, { additionalProperties: false }),
    usage: Type.Object(
      {
        period: Type.String({ pattern: '^[0-9]{4}-[0-9]{2}$', description: 'Current UTC month, YYYY-MM' }),
        used: Type.Integer(),
        remaining: Type.Integer({ description: 'limits.monthly - used, never below 0' }),
      },
      { additionalProperties: false },
    ),
    availableScopes: Type.Array(Type.String()),
  },
  { additionalProperties: false },
);
export type MeResponse = Static<typeof MeResponseSchema>;

export function registerMeRoute(app: App, deps: RouteDeps): void {
  defineRoute(app, {
    path: '/me',
    operationId: 'me',
    tag: 'Account',
    summary: 'The key, its plan and its usage',
    description:
      'The plan, the scopes of the presented key, the limits and this month\'s usage. Counts toward the burst ' +
      'limit but never against the monthly quota. Not wrapped in `data`.',
    quota: false,
    response: MeResponseSchema,
    handler: async (request) => {
      const principal = request.principal!;
      const { period, used } = request.usage ?? { period: periodOf(deps.clock.now()), used: 0 };
      return {
        plan: principal.plan,
        scopes: SCOPES.filter((s) => principal.scopes.has(s)),
        limits: { monthly: principal.limits.monthly, perMinute: principal.limits.perMinute },
        usage: { period, used, remaining: quotaRemaining(principal.limits, used) },
        availableScopes: [...SCOPES],
      };
    },
  });
}
