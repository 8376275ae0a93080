/**
 * What the pipeline keeps on each request (its principal, its quota charge, its deadline, ...) and what a
 * route declares to it (`meta`, `preflight`, `public`): Fastify's types widened to hold them, and the
 * request decorations that give every request their starting values.
 */
import type { KeyRefusal, Principal } from '../../auth/authenticate.js';
import type { Scope } from '../../domain/scopes.js';
import type { BurstState } from '../../metering/meter.js';
import type { App } from '../app-types.js';

/** What a route declares about itself to the pipeline. */
export interface RouteMeta {
  /** Scope the endpoint needs; null for /me. */
  scope: Scope | null;
  /** Counts against the monthly quota (every endpoint but /me). */
  quota: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    /** The quota count this request holds (its month and UTC day), so a 5xx or a 304 can give it back; null when none was taken or it was given back. */
    quotaCharge: { period: string; day: string } | null;
    /** The account's quota usage as the meter saw it when admitting this request (/me reports it). */
    usage: { period: string; used: number } | null;
    /** The admission's burst state and time, to restate the rate-limit headers after a give-back. */
    burst: { state: BurstState; now: number } | null;
    /** Epoch ms by which the request is answered, 503 if its stores have not answered (deadline.ts). */
    deadline: number;
    /** A known key refused (revoked, expired, a refused address, lapsed plan): whose attempt it was and why, for the owner's statistics. */
    refusedKey: { keyId: number; accountId: number; refusal: KeyRefusal } | null;
    /**
     * The error this request was answered with, for the owner's statistics; `storeDown` when it was a 503
     * that a store caused, not only the request's deadline passing (its key's line, key-gate.ts).
     */
    failure: { code: string; message: string; storeDown?: boolean } | null;
    /** The store's data version, read with the key check; null when none was read (item-answers.ts). */
    dataVersion: number | null;
    /**
     * PostgreSQL + Redis, when the key check read nothing from PostgreSQL: the data version as the LISTEN
     * connection last heard it (within a second of a load or import). Single-item answers use it; lists,
     * searches and exports read the data version themselves (dataVersion is null then).
     */
    notifiedDataVersion: number | null;
    /** The access version of a held principal used without reading PostgreSQL, for the meter to check; else null. */
    heldAccessVersion: number | null;
    /** The account's access version as read from PostgreSQL for this request, for the meter to keep; else null. */
    readAccessVersion: number | null;
  }
  interface FastifyContextConfig {
    meta?: RouteMeta;
    /** Set on the OPTIONS twin of every route. */
    preflight?: boolean;
    /** Served outside the Developer API (the reference page, the settings screen): no key, no metering, no rate-limit headers. */
    public?: boolean;
  }
}

/** Declares every request field above with its starting value (Fastify's decorateRequest), once per app. */
export function decorateApiRequests(app: App): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('quotaCharge', null);
  app.decorateRequest('usage', null);
  app.decorateRequest('burst', null);
  app.decorateRequest('deadline', 0);
  app.decorateRequest('refusedKey', null);
  app.decorateRequest('failure', null);
  app.decorateRequest('dataVersion', null);
  app.decorateRequest('notifiedDataVersion', null);
  app.decorateRequest('heldAccessVersion', null);
  app.decorateRequest('readAccessVersion', null);
}
