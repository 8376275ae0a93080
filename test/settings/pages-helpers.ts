/**
 * What the settings tests share: the screen's paths, and the owner's steps the pages tests repeat (count the account's
 * keys, post the create form as a browser would, create a key and read it off the page that shows it once, call
 * the API with a key). The steps read the suite's state when they run: the test file's hooks make it.
 */
import assert from 'node:assert/strict';
import { KEY_PATTERN } from '../../src/keys/api-key.js';
import type { TestContext } from '../helpers/test-app.js';
import { nonceOf, textOf, tokenOf, type SettingsClient } from './settings-helpers.js';

export const OVERVIEW = '/settings/developer-api';
export const NEW = '/settings/developer-api/keys/new';
export const CREATE = '/settings/developer-api/keys';
export const CREATED = '/settings/developer-api/keys/created';
export const LOG = '/settings/developer-api/security-log';
export const key = (id: number, action = '') => `/settings/developer-api/keys/${id}${action}`;

/** The state of a settings pages suite: its store and app, alice's account id, and this test's signed-in browser. */
export interface PagesState {
  ctx: TestContext;
  alice: number;
  browser: SettingsClient;
}

export function pageSteps(state: () => PagesState) {
  async function keyCount(accountId = state().alice): Promise<number> {
    const { ctx } = state();
    const rows = await ctx.store.db.selectFrom('api_keys').select('id').where('account_id', '=', accountId).execute();
    return rows.length;
  }

  /** Posts the create form as a browser would: token and nonce from the page. */
  async function create(fields: Record<string, string | string[]>, from = state().browser) {
    const page = await from.get(NEW);
    assert.equal(page.statusCode, 200, page.body);
    return from.post(CREATE, { _csrf: tokenOf(page.body), nonce: nonceOf(page.body), ...fields });
  }

  async function createAndReveal(name: string, scopes: string[], expiry = '90d'): Promise<{ id: number; secret: string }> {
    const { browser } = state();
    const res = await create({ name, scopes, expiry });
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, CREATED);
    const shown = await browser.get(CREATED);
    assert.equal(shown.statusCode, 200);
    assert.equal(shown.headers['cache-control'], 'no-store');
    const secret = shown.body.match(KEY_PATTERN)?.[0];
    assert.ok(secret, 'the key is shown');
    const text = textOf(shown.body);
    assert.match(text, /Copy this key now: it is shown only once/);
    assert.ok(text.includes(`curl -H "X-API-Key: ${secret}" http://localhost:80/developer/v1/me`), 'a ready curl line against /me');
    assert.match(shown.body, /<button type="button" data-copy="new-key" hidden>Copy<\/button>/);
    const id = Number(/\/settings\/developer-api\/keys\/([0-9]+)"/.exec(shown.body)?.[1]);
    return { id, secret };
  }

  const api = (secret: string, path: string) => state().ctx.app.inject({ method: 'GET', url: `/developer/v1${path}`, headers: { 'x-api-key': secret } });

  return { keyCount, create, createAndReveal, api };
}
