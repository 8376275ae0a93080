/**
 * What a key's allowed addresses cost the key check (src/auth/authenticate.ts, step 3), in CPU time per
 * call: authenticate() on a row held in memory (as the principal cache holds it, so its parsed form is
 * reused), for a key without a list (the hot path: it must not work out the client address at all), and
 * for keys with 1 and 50 entries, the client matching the last entry (the longest walk), IPv4 and IPv6.
 * No store and no HTTP: the added work alone. Rounds alternate between the cases so that a shared machine's
 * load falls on all alike; the median of ROUNDS is printed.
 *
 *   node --import tsx bench/allowed-addresses.ts            (ROUNDS=7, CALLS=200000)
 */
import { authenticate, type AuthDeps } from '../src/auth/authenticate.js';
import { DEFAULT_PLAN_LIMITS } from '../src/domain/scopes.js';
import { generateKey } from '../src/keys/api-key.js';
import type { KeyWithAccount } from '../src/store/repositories/api-key.repository.js';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const CALLS = Number(process.env.CALLS ?? 200_000);

const key = generateKey('shelf');
const headers = ['x-api-key', key];
const row = (allowedAddresses: string | null): KeyWithAccount => ({
  keyId: 1,
  accountId: 1,
  scopes: 'catalogue:read prices:read',
  expiresAt: '2099-01-01T00:00:00.000Z',
  revokedAt: null,
  retiresAt: null,
  allowedAddresses,
  plan: 'enthusiast',
  planStatus: 'active',
  accessVersion: 1,
});

const v4List = (n: number) => Array.from({ length: n }, (_, i) => `10.${i}.0.0/16`).join(' ');
const v6List = (n: number) => Array.from({ length: n }, (_, i) => `2001:db8:${i.toString(16)}::/48`).join(' ');
const cases: Array<{ name: string; row: KeyWithAccount; client: string }> = [
  { name: 'no list (any address)', row: row(null), client: '10.0.0.1' },
  { name: '1 IPv4 range', row: row('10.0.0.0/8'), client: '10.0.0.1' },
  { name: '50 IPv4 ranges, last matches', row: row(v4List(50)), client: '10.49.0.1' },
  { name: '50 IPv6 ranges, last matches', row: row(v6List(50)), client: '2001:db8:31::1' },
];

async function round(c: (typeof cases)[number]): Promise<number> {
  let asked = 0;
  const client = {
    get clientAddress() {
      asked++;
      return c.client;
    },
  };
  const start = process.cpuUsage();
  // A deps object per call, as the pipeline makes one per request.
  for (let i = 0; i < CALLS; i++) {
    const deps: AuthDeps = { findKey: async () => c.row, keyPrefix: 'shelf', planLimits: DEFAULT_PLAN_LIMITS };
    await authenticate(headers, 0, deps, client);
  }
  const used = process.cpuUsage(start);
  if (c.row.allowedAddresses === null && asked !== 0) throw new Error('a key without a list asked for the client address');
  return ((used.user + used.system) * 1000) / CALLS;
}

const samples = new Map(cases.map((c) => [c.name, [] as number[]]));
for (const c of cases) await round(c); // warm-up
for (let r = 0; r < ROUNDS; r++) for (const c of cases) samples.get(c.name)!.push(await round(c));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const c of cases) console.log(`${c.name.padEnd(32)} ${median(samples.get(c.name)!).toFixed(0).padStart(6)} ns CPU per key check`);
