/**
 * A small cookie-keeping client for the settings screen over app.inject: signs in with a handover link,
 * reads form tokens out of pages, posts forms with this site's Origin (or another, to test refusals).
 */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { handoverSecret, mintHandoverToken } from '../../src/services/settings-auth/handover-token.js';
import type { TestContext } from '../helpers/test-app.js';

export const SITE = 'http://localhost:80';

export class SettingsClient {
  readonly cookies = new Map<string, string>();
  constructor(private readonly ctx: TestContext) {}

  private remember(res: LightMyRequestResponse): void {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number; expires?: Date }>) {
      const cleared = c.value === '' || c.maxAge === 0 || (c.expires !== undefined && c.expires.getTime() <= Date.now());
      if (cleared) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
  }

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(url: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    const res = await this.ctx.app.inject({ method: 'GET', url, headers: { cookie: this.cookieHeader(), ...headers } });
    this.remember(res);
    return res;
  }

  async post(url: string, form: Record<string, string | string[]>, headers: Record<string, string> = { origin: SITE }): Promise<LightMyRequestResponse> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
    const res = await this.ctx.app.inject({
      method: 'POST',
      url,
      headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: body.toString(),
    });
    this.remember(res);
    return res;
  }

  /** Signs in as the account with a fresh link (the redirect to the overview is checked, not followed). */
  async signIn(accountId: number): Promise<void> {
    const token = await mintLink(this.ctx, accountId);
    const res = await this.get(`/settings/sign-in?token=${token}`);
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, '/settings/developer-api');
  }

  /** The form token of a page (every form of a page carries the same one). */
  async formToken(url = '/settings/developer-api'): Promise<string> {
    return tokenOf((await this.get(url)).body);
  }
}

export async function mintLink(ctx: TestContext, accountId: number, options: { now?: number; minutes?: number } = {}): Promise<string> {
  const now = options.now ?? ctx.clock.now();
  const secret = await handoverSecret(ctx.store, ctx.config, now);
  return (await mintHandoverToken({ secret, accountId, now, ...(options.minutes ? { minutes: options.minutes } : {}) })).token;
}

/** The one-time nonce of a create or roll form. */
export function nonceOf(html: string): string {
  const match = /name="nonce" value="([0-9a-f]{32})"/.exec(html);
  assert.ok(match, 'the form has a nonce');
  return match[1]!;
}

export function tokenOf(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  assert.ok(match, 'the page has a form token');
  return match[1]!;
}

/** The text of a page without tags, whitespace collapsed: what a reader sees. */
export function textOf(html: string): string {
  return html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ');
}
