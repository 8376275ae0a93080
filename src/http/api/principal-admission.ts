/**
 * Steps 1 to 4 of the pipeline (method, key, allowed addresses, plan) for the key a request presents, and
 * the one meter call that then decides its burst and quota. On SQLite and on PostgreSQL + Redis a principal
 * this server holds is used without reading the database, and the admission checks its access version: when that is no
 * longer the account's (STALE), the key is read again (reauthenticate) and admitted again, without the
 * check (api-pipeline.ts says where each is called).
 */
import type { FastifyRequest } from 'fastify';
import { authenticate, RefusedKeyError, type Principal } from '../../auth/authenticate.js';
import { PrincipalCache } from '../../auth/principal-cache.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import { settleBy } from '../../deadline.js';
import type { Admission, Meter } from '../../metering/meter.js';
import { STALE, type AccessCheckedMeter } from '../../metering/meter.js';
import type { HotQueries } from '../../store/hot-queries.js';
import { ApiError } from '../errors.js';
import { ACCEPTED_METHODS, ALLOW } from './api-methods.js';
import { rateLimitHeaders } from './rate-limit-headers.js';

export interface HeldPrincipalsDeps {
  meter: AccessCheckedMeter;
  versions: {
    /** False while held principals must not be used (Redis: the LISTEN connection is down, or a version not yet in Redis). */
    trusted(): boolean;
    /** The data version as notified (Redis) or as the last admissions read it (SQLite); only read while trusted. */
    readonly dataVersion: number | null;
  };
}

/** What finding and admitting a principal reads: the key lookup, the meter, the clock. */
export interface PrincipalAdmissionDeps {
  config: Readonly<Config>;
  meter: Meter;
  clock: Clock;
  queries: HotQueries;
  /** SQLite and PostgreSQL + Redis: held principals and the meter that checks them; null elsewhere. */
  held: HeldPrincipalsDeps | null;
}

export function principalAdmission(deps: PrincipalAdmissionDeps) {
  const { config, meter, clock, queries, held } = deps;
  const principals = new PrincipalCache(queries);

  /**
   * Steps 1 to 4: method (405), key (401), allowed addresses (401), plan (403). With `mayUseHeld`, a principal this server holds is
   * used unchecked (the admission checks it), unless its row would be refused: that is read again first.
   */
  async function methodKeyAndPlan(request: FastifyRequest, mayUseHeld: boolean): Promise<Principal> {
    if (!ACCEPTED_METHODS.has(request.method)) {
      throw new ApiError('method_not_allowed', `Method ${request.method} is not allowed; use GET, HEAD or OPTIONS.`, {
        allow: ALLOW,
      });
    }
    const useHeld = mayUseHeld && held !== null && held.versions.trusted();
    request.heldAccessVersion = null;
    request.readAccessVersion = null;
    try {
      return await authenticate(request.raw.rawHeaders, clock.now(), {
        findKey: async (keyHash) => {
          const row = useHeld ? principals.held(keyHash) : undefined;
          if (row !== undefined && held !== null) {
            request.heldAccessVersion = row.accessVersion;
            request.dataVersion = null;
            request.notifiedDataVersion = held.versions.dataVersion;
            return row;
          }
          const found = await principals.find(keyHash);
          request.dataVersion = found.dataVersion;
          request.notifiedDataVersion = null;
          request.readAccessVersion = found.key?.accessVersion ?? null;
          return found.key;
        },
        keyPrefix: config.keyPrefix,
        planLimits: config.planLimits,
        // The request is where a key with allowed addresses reads the client's address (a getter), when it does.
      }, request);
    } catch (error) {
      // A refusal is never decided on a row that was not checked: a plan renewed since must not be refused.
      if (error instanceof RefusedKeyError && request.heldAccessVersion !== null) return methodKeyAndPlan(request, false);
      throw error;
    }
  }

  /** Steps 2 and 3 again, from PostgreSQL: the held principal's access version was not the account's. */
  async function reauthenticate(request: FastifyRequest): Promise<Principal> {
    // The held principal is no longer the key's: a refusal now must be recorded as the key's refusal (a
    // revoked key's attempt, say), not as a request of the principal that was held.
    request.principal = null;
    try {
      request.principal = await settleBy(request.deadline, methodKeyAndPlan(request, false), 'the key lookup');
    } catch (error) {
      if (error instanceof RefusedKeyError) request.refusedKey = { keyId: error.keyId, accountId: error.accountId, refusal: error.refusal };
      throw error;
    }
    return request.principal;
  }

  /**
   * One meter call for the principal at the clock's now, and the rate-limit headers that state its outcome;
   * STALE when the principal was held and its access version is no longer the account's (nothing counted).
   */
  async function admitNow(request: FastifyRequest, principal: Principal, quota: boolean, deadline: number) {
    const now = clock.now();
    const admitRequest = {
      accountId: principal.accountId,
      keyId: principal.keyId,
      limits: principal.limits,
      quota,
      now,
      deadline,
    };
    let admission: Admission;
    if (held !== null) {
      const checked = await held.meter.admitChecked(admitRequest, { held: request.heldAccessVersion, known: request.readAccessVersion });
      if (checked === STALE) return STALE;
      admission = checked;
      // The data version as it stands after the admission (SQLite: read in the admission's own transaction).
      if (request.heldAccessVersion !== null) request.notifiedDataVersion = held.versions.dataVersion;
    } else {
      admission = await meter.admit(admitRequest);
    }
    return { now, admission, headers: rateLimitHeaders(principal.limits, admission.burst, admission.quota?.used ?? null, now) };
  }

  return {
    methodKeyAndPlan,
    reauthenticate,
    admitNow,
    /** Drops every principal this server holds. */
    dropHeldPrincipals: () => principals.clear(),
  };
}
