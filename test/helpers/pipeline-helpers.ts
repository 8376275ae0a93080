/**
 * Helpers shared by the HTTP pipeline tests (auth battery, pipeline order, parameters): the endpoint list,
 * the checks every response and every error body must pass (docs/contract.md, "Responses"), and small readers of
 * the metering state, through the contract's headers or the meter itself.
 */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { Scope } from '../../src/domain/scopes.js';
import { hashKey } from '../../src/keys/api-key.js';
import { periodOf } from '../../src/metering/periods.js';
import { keyByHashQuery } from '../../src/store/repositories/api-key.repository.js';
import { V1, type TestContext } from './test-app.js';

export interface Endpoint {
  /** Path under /developer/v1, with existing ids filled in. */
  path: string;
  /** Scope the endpoint needs; null for /me. */
  scope: Scope | null;
  /** JSON, or the CSV export. */
  csv?: boolean;
}

/** All 12 endpoints of the specification, with ids that exist in the fixture for alice. */
export const ENDPOINTS: readonly Endpoint[] = [
  { path: '/me', scope: null },
  { path: '/catalogue', scope: 'catalogue:read' },
  { path: '/catalogue/1', scope: 'catalogue:read' },
  { path: '/prices', scope: 'prices:read' },
  { path: '/prices/1', scope: 'prices:read' },
  { path: '/prices/export.csv', scope: 'export', csv: true },
  { path: '/collection', scope: 'collection:read' },
  { path: '/collection/value', scope: 'collection:read' },
  { path: '/collection/1', scope: 'collection:read' },
  { path: '/listings', scope: 'marketplace:read' },
  { path: '/offers', scope: 'marketplace:read' },
  { path: '/transactions', scope: 'transactions:read' },
];

export const ALLOW_HEADER = 'GET, HEAD, OPTIONS';
export const JSON_TYPE = 'application/json; charset=utf-8';

export const url = (path: string): string => `${V1}${path}`;

/** Raw request with exactly the headers given (no fixture key added). */
export function raw(
  ctx: TestContext,
  path: string,
  headers: Record<string, string | string[]> = {},
  method = 'GET',
): Promise<LightMyRequestResponse> {
  return ctx.app.inject({ method: method as 'GET', url: path, headers });
}

/** Section 4: X-Request-Id, Cache-Control: private, no-store, no Set-Cookie, no Access-Control-*. */
export function assertCommonHeaders(res: LightMyRequestResponse): void {
  const requestId = res.headers['x-request-id'];
  assert.equal(typeof requestId, 'string', 'X-Request-Id is present');
  assert.notEqual(requestId, '', 'X-Request-Id is not empty');
  assert.equal(res.headers['cache-control'], 'private, no-store');
  assert.equal(res.headers['set-cookie'], undefined, 'no Set-Cookie');
  const cors = Object.keys(res.headers).filter((name) => name.toLowerCase().startsWith('access-control-'));
  assert.deepEqual(cors, [], 'no Access-Control-* header');
}

/** Parses a JSON error body, checks it is exactly {error, message} with this code, and returns it. */
export function assertError(res: LightMyRequestResponse, status: number, code: string): { error: string; message: string } {
  assert.equal(res.statusCode, status, `status (body: ${res.body})`);
  assertCommonHeaders(res);
  assert.equal(res.headers['content-type'], JSON_TYPE);
  const body: unknown = JSON.parse(res.body);
  assert.ok(typeof body === 'object' && body !== null && !Array.isArray(body), 'the body is a JSON object');
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], 'the body is exactly {error, message}');
  const { error, message } = body as { error: unknown; message: unknown };
  assert.equal(error, code);
  assert.equal(typeof message, 'string');
  assert.ok((message as string).length > 0, 'the message is not empty');
  return { error: code, message: message as string };
}

/** The key, nor its secret part, appears nowhere in the response (body or headers). */
export function assertNoKeyLeak(res: LightMyRequestResponse, key: string): void {
  const secret = key.slice(key.indexOf('_live_') + '_live_'.length);
  const everything = `${res.body}\n${JSON.stringify(res.headers)}`;
  assert.ok(!everything.includes(key), 'the response does not contain the key');
  if (secret.length >= 8) assert.ok(!everything.includes(secret), 'the response does not contain the key secret');
}

/** The same key with its last character changed: the checksum no longer holds. */
export function flipLastChar(key: string): string {
  const last = key.slice(-1);
  return key.slice(0, -1) + (last === 'A' ? 'B' : 'A');
}

/** Empties the burst window of every account (the clock is manual: nothing else ever slides it). */
export function nextWindow(ctx: TestContext): void {
  ctx.clock.advance(61_000);
}

/** Requests counted against an account's quota this month, read from the meter (no request made). */
export function quotaUsed(ctx: TestContext, accountRef: string): Promise<number> {
  const accountId = ctx.loaded.accounts[accountRef];
  if (accountId === undefined) throw new Error(`no fixture account ${accountRef}`);
  return ctx.meter.used(accountId, periodOf(ctx.clock.now()));
}

/** The burst slots left after this request, from the IETF draft header `RateLimit: "burst";r=N;...`. */
export function burstLeft(res: LightMyRequestResponse): number {
  const header = res.headers['ratelimit'];
  assert.equal(typeof header, 'string', `RateLimit header present (status ${res.statusCode})`);
  const match = /"burst";r=(\d+)/.exec(header as string);
  assert.ok(match, `RateLimit has a burst item: ${String(header)}`);
  return Number(match[1]);
}

/** X-RateLimit-Remaining as a number. */
export function remaining(res: LightMyRequestResponse): number {
  const header = res.headers['x-ratelimit-remaining'];
  assert.ok(header !== undefined, `X-RateLimit-Remaining present (status ${res.statusCode})`);
  return Number(header);
}

/** The store id of a fixture key, by its hash. */
export async function keyIdOf(ctx: TestContext, keyRef: string): Promise<number> {
  const full = ctx.loaded.keys[keyRef];
  if (full === undefined) throw new Error(`no fixture key ${keyRef}`);
  const row = await keyByHashQuery(ctx.store.db, hashKey(full)).executeTakeFirst();
  if (!row) throw new Error(`fixture key ${keyRef} is not in the store`);
  return row.keyId;
}

/** The full key of a fixture ref. */
export function keyOf(ctx: TestContext, keyRef: string): string {
  const full = ctx.loaded.keys[keyRef];
  if (full === undefined) throw new Error(`no fixture key ${keyRef}`);
  return full;
}

/** /me as parsed JSON (with the alice key unless told), asserting 200. */
export async function me(ctx: TestContext, keyRef = 'alice'): Promise<{ res: LightMyRequestResponse; used: number; monthly: number }> {
  const res = await ctx.get(url('/me'), keyRef);
  assert.equal(res.statusCode, 200, `/me: ${res.body}`);
  const body = JSON.parse(res.body) as { usage: { used: number }; limits: { monthly: number } };
  return { res, used: body.usage.used, monthly: body.limits.monthly };
}
