/** Overview (/settings/developer-api): access, this month, burst, the keys; the route adds the account's usage (one chart). */
import type { ComponentChildren } from 'preact';
import type { PlanLimits } from '../../../domain/scopes.js';
import { paths } from '../paths.js';
import { Banner, FormToken, Time } from './components.js';
import { formatCount, percent } from './format.js';
import { KeyItem, type KeyView } from './key-summary.js';
import { Layout, type SignedInShell } from './layout.js';
import { LeaksBanner } from './leak-banner.js';
import type { KeyLeak } from '../../../services/leaked-key-replacement.js';

export interface OverviewData {
  now: number;
  plan: string;
  planStatus: string | null;
  /** Null with no plan. */
  limits: PlanLimits | null;
  month: { used: number; resetAt: string };
  burstUsed: number;
  keys: readonly KeyView[];
  /** Keys whose expiry reminder the owner hid until the next UTC day. */
  hiddenReminders: readonly number[];
  /** Keys revoked for a leak (found public) within 90 days. */
  leaks?: readonly KeyLeak[];
}

const PLAN_NAMES: Record<string, string> = { enthusiast: 'Enthusiast', addon: 'Developer API add-on', none: 'No plan' };

export function accessActive(data: Pick<OverviewData, 'plan' | 'planStatus'>): boolean {
  return data.plan !== 'none' && data.planStatus === 'active';
}

function MonthCard({ data }: { data: OverviewData }) {
  if (data.limits === null) return null;
  const { used, resetAt } = data.month;
  const monthly = data.limits.monthly;
  const share = percent(used, monthly);
  const remaining = Math.max(0, monthly - used);
  return (
    <section class="card" aria-labelledby="month-heading">
      <h2 id="month-heading">This month</h2>
      <p class="figure">
        {formatCount(used)} <span class="small muted">of {formatCount(monthly)} requests</span>
      </p>
      <label for="month-meter" class="visually-hidden">
        Share of the monthly quota used
      </label>
      <meter id="month-meter" min={0} max={monthly} low={monthly * 0.8} high={monthly * 0.999} optimum={0} value={Math.min(used, monthly)}>
        {share}%
      </meter>
      <p class="small">
        {share}% used, {formatCount(remaining)} remaining. Resets <Time at={resetAt} now={data.now} exact />.
      </p>
      {used >= monthly ? (
        <Banner tone="danger">
          <p>
            The monthly quota is used up: every request that counts is answered 429 <code>quota_exceeded</code> until the reset.
          </p>
        </Banner>
      ) : share >= 80 ? (
        <Banner tone="warning">
          <p>
            {share}% of the monthly quota is used. At 100%, requests are answered 429 <code>quota_exceeded</code> until the
            reset.
          </p>
        </Banner>
      ) : null}
    </section>
  );
}

/** The keys that expire within 7 days, each with a form hiding its reminder until the next UTC day. */
function ExpiryBanner({ keys, now, formToken }: { keys: readonly KeyView[]; now: number; formToken: string }) {
  const one = keys.length === 1;
  return (
    <Banner tone="warning">
      <p>
        {one ? 'A key expires' : `${keys.length} keys expire`} within 7 days: roll {one ? 'it' : 'them'} to get a replacement before
        scripts start failing.
      </p>
      <ul class="reminders">
        {keys.map((k) => (
          <li>
            <span>
              <a href={paths.key(k.id)}>{k.name}</a> expires <Time at={k.expiresAt ?? ''} now={now} exact />
            </span>
            <form method="post" action={paths.hideExpiryReminder(k.id)}>
              <FormToken token={formToken} />
              <button type="submit" class="button-secondary button-small">
                Hide until tomorrow<span class="visually-hidden"> the reminder for {k.name}</span>
              </button>
            </form>
          </li>
        ))}
      </ul>
    </Banner>
  );
}

export function OverviewPage({
  shell,
  data,
  notice,
  children,
}: {
  shell: SignedInShell;
  data: OverviewData;
  notice: string | null;
  /** Sections of their own after the page's (the usage chart), composed by the route. */
  children?: ComponentChildren;
}) {
  const active = accessActive(data);
  const working = data.keys.filter((k) => k.status.status !== 'expired' && k.status.status !== 'revoked');
  const ended = data.keys.filter((k) => k.status.status === 'expired' || k.status.status === 'revoked');
  // Live keys that expire within 7 days (a rolled key on its way out has its replacement already).
  const expiringSoon = working.filter((k) => k.status.status === 'expires_soon' && !data.hiddenReminders.includes(k.id));
  return (
    <Layout title="Developer API" shell={shell} notice={notice}>
      <h1>Developer API</h1>
      {data.leaks ? <LeaksBanner leaks={data.leaks} now={data.now} formToken={shell.formToken} /> : null}
      {expiringSoon.length > 0 ? <ExpiryBanner keys={expiringSoon} now={data.now} formToken={shell.formToken} /> : null}
      <div class="grid grid-3">
        <section class="card" aria-labelledby="access-heading">
          <h2 id="access-heading">Access</h2>
          <dl class="facts">
            <dt>Plan</dt>
            <dd>{PLAN_NAMES[data.plan] ?? data.plan}</dd>
            <dt>Status</dt>
            <dd>{active ? <span class="status status-active">Active</span> : <span class="status status-revoked">{data.plan === 'none' ? 'No access' : 'Lapsed'}</span>}</dd>
            {data.limits === null ? null : (
              <>
                <dt>Monthly quota</dt>
                <dd>{formatCount(data.limits.monthly)} requests</dd>
                <dt>Burst limit</dt>
                <dd>{formatCount(data.limits.perMinute)} per minute</dd>
              </>
            )}
          </dl>
          {active ? null : (
            <Banner tone="danger">
              <p>
                Developer API access is not active: every key answers 403 <code>forbidden</code> until the plan is renewed. You can
                still view and revoke keys, not create them.
              </p>
            </Banner>
          )}
        </section>
        <MonthCard data={data} />
        {data.limits === null ? null : (
          <section class="card" aria-labelledby="burst-heading">
            <h2 id="burst-heading">Burst</h2>
            <p class="figure">
              {formatCount(data.burstUsed)} <span class="small muted">of {formatCount(data.limits.perMinute)} in the last 60 seconds</span>
            </p>
            <label for="burst-meter" class="visually-hidden">
              Requests in the last 60 seconds against the per-minute limit
            </label>
            <meter id="burst-meter" min={0} max={data.limits.perMinute} high={data.limits.perMinute * 0.8} optimum={0} value={Math.min(data.burstUsed, data.limits.perMinute)}>
              {percent(data.burstUsed, data.limits.perMinute)}%
            </meter>
            <p class="small muted">Over the limit, requests are answered 429 <code>rate_limited</code> with Retry-After.</p>
          </section>
        )}
      </div>
      <section class="card" aria-labelledby="keys-heading">
        <div class="actions">
          <h2 id="keys-heading">Keys</h2>
          {active ? (
            <a class="button" href={paths.newKey}>
              Create key
            </a>
          ) : null}
        </div>
        {working.length === 0 ? (
          <p class="muted">No working keys. {active ? <a href={paths.newKey}>Create one</a> : null}</p>
        ) : (
          <ul class="keys">
            {working.map((k) => (
              <KeyItem keyView={k} now={data.now} />
            ))}
          </ul>
        )}
        {ended.length > 0 ? (
          <>
            <h3>Expired and revoked (kept here for 90 days)</h3>
            <ul class="keys">
              {ended.map((k) => (
                <KeyItem keyView={k} now={data.now} />
              ))}
            </ul>
          </>
        ) : null}
      </section>
      {children}
    </Layout>
  );
}
