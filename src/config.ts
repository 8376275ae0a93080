/**
 * Configuration from the environment, parsed once and frozen. A bad value stops the program with a message
 * naming the variable (ConfigError), before anything listens or writes.
 */
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseAddressList } from './domain/address-list.js';
import { DEFAULT_PLAN_LIMITS, PLANS, type Plan, type PlanLimits } from './domain/scopes.js';

export type DatabaseConfig =
  | { dialect: 'sqlite'; path: string }
  | { dialect: 'postgres'; url: string };

export interface Config {
  database: DatabaseConfig;
  redisUrl: string | null;
  /** Seed nodes of a Redis Cluster for the meter and the owners' statistics (REDIS_CLUSTER_URLS); never set together with redisUrl. */
  redisClusterUrls: readonly string[] | null;
  /** Prefix of every Redis key the meter writes, so deployments can share one Redis. */
  redisKeyPrefix: string;
  host: string;
  port: number;
  opsPort: number;
  keyPrefix: string;
  planLimits: Readonly<Record<Plan, PlanLimits>>;
  logLevel: string;
  /** Limits of the API's HTTP server against slow or too many clients. */
  connections: Readonly<ConnectionLimits>;
  /** Where owners reach this service (links the CLI prints; `Secure` cookies when https); null: http://HOST:PORT. */
  publicUrl: string | null;
  /** Secret shared with the platform for sign-in links; null: one generated once and kept in the store. */
  settingsHandoverSecret: string | null;
  /** Minutes after a sign-in during which the settings screen allows create, roll, revoke and scope changes. */
  settingsReauthMinutes: number;
  /**
   * Where the price guide file (the unfiltered CSV export, src/export/price-guide.ts) is written; null
   * when off. EXPORT_DIR, by default a `price-guide` directory beside the SQLite file, or the system's
   * temporary directory on PostgreSQL (each server its own copy); `off` streams every export from the store.
   */
  exportDir: string | null;
  /** Processes serving the port (WORKERS, or `serve --workers`): 1 is one process with no primary. */
  workers: number;
  /** Whether `serve` writes the owners' statistics into Redis or PostgreSQL from a thread of their own (STATS_THREAD). */
  statsThread: boolean;
  /**
   * After SIGTERM, how long the server goes on serving (each answer with `Connection: close`) while
   * `/readyz` answers 503, so that load balancers stop sending before it stops listening.
   */
  drainDelayMs: number;
  /**
   * Proxies whose X-Forwarded-For is believed (TRUST_PROXY: addresses or CIDR ranges, in canonical form);
   * null: the client address is always the socket's peer (src/http/client-address.ts).
   */
  trustProxy: readonly string[] | null;
  /**
   * SECRET_SCANNING_PUBLIC_KEYS: a file holding GitHub's secret scanning public keys document
   * (`{ public_keys: [{ key_identifier, key, is_current }] }`), read instead of fetching it from GitHub (a
   * server that cannot reach GitHub, tests); null: fetched from api.github.com (src/http/secret-scanning).
   */
  secretScanningPublicKeys: string | null;
}

export interface ConnectionLimits {
  /** The request line and headers must arrive within this time, or the answer is 408. */
  headersTimeoutMs: number;
  /** The whole request must arrive within this time (never less than headersTimeoutMs). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this time. */
  keepAliveTimeoutMs: number;
  /** Connections open at once; the server refuses more (closes them unanswered) until some end. */
  maxConnections: number;
}

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function parseDatabase(raw: string | undefined): DatabaseConfig {
  const value = raw === undefined || raw === '' ? './data/shelfapi.sqlite' : raw;
  if (/^postgres(ql)?:\/\//i.test(value)) {
    try {
      new URL(value);
    } catch {
      throw new ConfigError('DATABASE_URL', 'not a valid postgres:// URL');
    }
    return { dialect: 'postgres', url: value };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    throw new ConfigError('DATABASE_URL', 'expected postgres://..., file:PATH or an SQLite file path');
  }
  const path = value.startsWith('file:') ? value.slice('file:'.length) : value;
  if (path === '') throw new ConfigError('DATABASE_URL', 'file: needs a path');
  return { dialect: 'sqlite', path };
}

function parseExportDir(raw: string | undefined, database: DatabaseConfig): string | null {
  if (raw === 'off') return null;
  if (raw !== undefined && raw !== '') return raw;
  if (database.dialect === 'postgres') return join(tmpdir(), 'shelfapi-price-guide');
  return database.path === ':memory:' ? null : join(dirname(database.path), 'price-guide');
}

function parsePort(variable: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]+$/.test(raw) || Number(raw) > 65535) {
    throw new ConfigError(variable, `expected a port number 0..65535, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function parsePlanLimits(raw: string | undefined): Record<Plan, PlanLimits> {
  const limits: Record<Plan, PlanLimits> = {
    enthusiast: { ...DEFAULT_PLAN_LIMITS.enthusiast },
    addon: { ...DEFAULT_PLAN_LIMITS.addon },
  };
  if (raw === undefined || raw === '') return limits;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('PLAN_LIMITS', 'not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError('PLAN_LIMITS', 'expected a JSON object such as {"addon":{"monthly":5}}');
  }
  for (const [plan, override] of Object.entries(parsed)) {
    if (!(PLANS as readonly string[]).includes(plan)) {
      throw new ConfigError('PLAN_LIMITS', `unknown plan ${JSON.stringify(plan)} (plans: ${PLANS.join(', ')})`);
    }
    if (typeof override !== 'object' || override === null || Array.isArray(override)) {
      throw new ConfigError('PLAN_LIMITS', `${plan}: expected an object`);
    }
    for (const [field, value] of Object.entries(override as Record<string, unknown>)) {
      if (field !== 'monthly' && field !== 'perMinute') {
        throw new ConfigError('PLAN_LIMITS', `${plan}.${field}: unknown limit (limits: monthly, perMinute)`);
      }
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
        throw new ConfigError('PLAN_LIMITS', `${plan}.${field}: expected a whole number >= 0`);
      }
      limits[plan as Plan][field] = value;
    }
  }
  return limits;
}

/** The secret must carry at least 256 bits for HS256 (RFC 7518 section 3.2): 32 bytes of its UTF-8 text. */
export const MIN_HANDOVER_SECRET_BYTES = 32;

function parsePublicUrl(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('PUBLIC_URL', 'not a valid URL such as https://api.example.com');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError('PUBLIC_URL', 'expected http:// or https://');
  if (url.search !== '' || url.hash !== '' || (url.pathname !== '/' && url.pathname !== '')) {
    throw new ConfigError('PUBLIC_URL', 'expected an origin only, such as https://api.example.com (no path, query or fragment)');
  }
  return url.origin;
}

function parseHandoverSecret(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  if (Buffer.byteLength(raw, 'utf8') < MIN_HANDOVER_SECRET_BYTES) {
    throw new ConfigError('SETTINGS_HANDOVER_SECRET', `expected at least ${MIN_HANDOVER_SECRET_BYTES} bytes`);
  }
  return raw;
}

function parseWhole(variable: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(variable, `expected a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function parseConnectionLimits(env: Env): ConnectionLimits {
  const headersTimeoutMs = parseWhole('HEADERS_TIMEOUT_MS', env.HEADERS_TIMEOUT_MS, 10_000, 100, 600_000);
  const requestTimeoutMs = parseWhole('REQUEST_TIMEOUT_MS', env.REQUEST_TIMEOUT_MS, 30_000, 100, 600_000);
  if (requestTimeoutMs < headersTimeoutMs) {
    throw new ConfigError('REQUEST_TIMEOUT_MS', `must not be less than HEADERS_TIMEOUT_MS (${headersTimeoutMs})`);
  }
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: parseWhole('KEEP_ALIVE_TIMEOUT_MS', env.KEEP_ALIVE_TIMEOUT_MS, 72_000, 100, 600_000),
    maxConnections: parseWhole('MAX_CONNECTIONS', env.MAX_CONNECTIONS, 1_000, 1, 1_000_000),
  };
}

/** Worker processes at most: far more than any machine's cores, and a guard against a mistyped count. */
export const MAX_WORKERS = 256;

/**
 * A worker count as `serve --workers` or WORKERS give it: a whole number from 1, or `auto` for the
 * machine's cores (`cores`, os.availableParallelism()). `source` names the flag or variable in the error.
 */
export function parseWorkers(source: string, raw: string | undefined, cores: number): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'auto') return Math.max(1, Math.min(cores, MAX_WORKERS));
  if (!/^[0-9]+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_WORKERS) {
    throw new ConfigError(source, `expected a whole number from 1 to ${MAX_WORKERS} or "auto", got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/**
 * STATS_THREAD: `on`, `off`, or `auto` (the default). Into Redis, `auto` is on when the machine has 2 cores for
 * each server process: one for its requests, one its thread shares with Redis and the rest (docs/performance.md
 * has what it gains). Into SQLite `auto` is off: in turns on 2 cores the thread gained nothing with one key and
 * 7-8% over 2,000 and 10,000 accounts, for 70-115 MB more RSS under load, which took a server over its 300 MB
 * (docs/operations.md, "Memory"). Into PostgreSQL the thread adds a connection beside the meter's pool and its
 * gain on 2 cores was never measured: at least 4 cores and 2 a process there. Several servers on one machine
 * (tests, a bench's "two servers") must say `off`: each counts only its own `--workers`.
 */
export function parseStatsThread(raw: string | undefined, cores: number, workers: number, statsInto: 'redis' | 'sqlite' | 'postgres'): boolean {
  if (raw === undefined || raw === '' || raw === 'auto') {
    if (statsInto === 'sqlite') return false;
    return statsInto === 'postgres' ? cores >= Math.max(4, 2 * workers) : cores >= 2 * workers;
  }
  if (raw === 'on') return true;
  if (raw === 'off') return false;
  throw new ConfigError('STATS_THREAD', `expected "on", "off" or "auto", got ${JSON.stringify(raw)}`);
}

/** A comma-separated list of seed nodes (any few masters of the cluster; the client finds the rest). */
function parseClusterUrls(raw: string | undefined): readonly string[] | null {
  if (raw === undefined || raw.trim() === '') return null;
  const urls = raw.split(',').map((url) => url.trim());
  for (const url of urls) {
    let parsed: URL | null = null;
    try {
      parsed = /^rediss?:\/\//.test(url) ? new URL(url) : null;
    } catch {
      parsed = null;
    }
    if (parsed === null || parsed.hostname === '') {
      throw new ConfigError('REDIS_CLUSTER_URLS', `expected comma-separated redis://host:port or rediss://host:port, got ${JSON.stringify(url)}`);
    }
  }
  return Object.freeze(urls);
}

/** TRUST_PROXY: comma-separated addresses or CIDR ranges; unset or empty: trust no proxy. */
function parseTrustProxy(raw: string | undefined): readonly string[] | null {
  if (raw === undefined || raw.trim() === '') return null;
  const { ranges, invalid } = parseAddressList(raw.split(','));
  if (invalid.length > 0) {
    throw new ConfigError(
      'TRUST_PROXY',
      `expected comma-separated IP addresses or CIDR ranges such as 127.0.0.1,10.0.0.0/8; not an address or a range: ${invalid.map((e) => JSON.stringify(e)).join(', ')}`,
    );
  }
  return Object.freeze(ranges.map((r) => r.text));
}

export function loadConfig(env: Env = process.env): Readonly<Config> {
  const keyPrefix = env.KEY_PREFIX === undefined || env.KEY_PREFIX === '' ? 'shelf' : env.KEY_PREFIX;
  if (!/^[a-z][a-z0-9]{1,15}$/.test(keyPrefix)) {
    throw new ConfigError('KEY_PREFIX', 'expected 2-16 lowercase letters or digits, starting with a letter');
  }
  const redisUrl = env.REDIS_URL === undefined || env.REDIS_URL === '' ? null : env.REDIS_URL;
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError('REDIS_URL', 'expected redis://... or rediss://...');
  }
  const database = parseDatabase(env.DATABASE_URL);
  const workers = parseWorkers('WORKERS', env.WORKERS, availableParallelism()) ?? 1;
  const redisClusterUrls = parseClusterUrls(env.REDIS_CLUSTER_URLS);
  if (redisUrl !== null && redisClusterUrls !== null) {
    throw new ConfigError('REDIS_CLUSTER_URLS', 'set either REDIS_URL (one Redis) or REDIS_CLUSTER_URLS (a Redis Cluster), not both');
  }
  const redisKeyPrefix = env.REDIS_KEY_PREFIX === undefined || env.REDIS_KEY_PREFIX === '' ? 'shelfapi:' : env.REDIS_KEY_PREFIX;
  // The meter tags each account's keys {a:<id>} to spread accounts over the cluster's slots; a tag in the
  // prefix would come first and put every account in one slot, on one master.
  if (redisClusterUrls !== null && /[{}]/.test(redisKeyPrefix)) {
    throw new ConfigError('REDIS_KEY_PREFIX', 'must not contain { or } on a Redis Cluster (a hash tag in the prefix would put every account in one slot)');
  }
  const port = parsePort('PORT', env.PORT, 8080);
  const opsPort = parsePort('OPS_PORT', env.OPS_PORT, 8081);
  if (port === opsPort && port !== 0) throw new ConfigError('OPS_PORT', `must differ from PORT (${port})`);
  return Object.freeze({
    database,
    redisUrl,
    redisClusterUrls,
    redisKeyPrefix,
    host: env.HOST === undefined || env.HOST === '' ? '127.0.0.1' : env.HOST,
    port,
    opsPort,
    keyPrefix,
    planLimits: Object.freeze(parsePlanLimits(env.PLAN_LIMITS)),
    logLevel: env.LOG_LEVEL === undefined || env.LOG_LEVEL === '' ? 'info' : env.LOG_LEVEL,
    connections: Object.freeze(parseConnectionLimits(env)),
    publicUrl: parsePublicUrl(env.PUBLIC_URL),
    settingsHandoverSecret: parseHandoverSecret(env.SETTINGS_HANDOVER_SECRET),
    settingsReauthMinutes: parseWhole('SETTINGS_REAUTH_MINUTES', env.SETTINGS_REAUTH_MINUTES, 60, 1, 720),
    exportDir: parseExportDir(env.EXPORT_DIR, database),
    workers,
    statsThread: parseStatsThread(env.STATS_THREAD, availableParallelism(), workers, redisUrl !== null || redisClusterUrls !== null ? 'redis' : database.dialect),
    drainDelayMs: parseWhole('DRAIN_DELAY_MS', env.DRAIN_DELAY_MS, 5_000, 0, 600_000),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    secretScanningPublicKeys: env.SECRET_SCANNING_PUBLIC_KEYS === undefined || env.SECRET_SCANNING_PUBLIC_KEYS === '' ? null : env.SECRET_SCANNING_PUBLIC_KEYS,
  });
}
