/**
 * Configuration from the environment, parsed once and frozen. A bad value stops the program with a message
 * naming the variable (ConfigError), before anything listens or writes.
 */
import { DEFAULT_PLAN_LIMITS, PLANS, type Plan, type PlanLimits } from './domain/scopes.js';

export type DatabaseConfig =
  | { dialect: 'sqlite'; path: string }
  | { dialect: 'postgres'; url: string };

export interface Config {
  database: DatabaseConfig;
  redisUrl: string | null;
  /** Prefix of every Redis key the meter writes, so deployments can share one Redis. */
  redisKeyPrefix: string;
  host: string;
  port: number;
  opsPort: number;
  keyPrefix: string;
  planLimits: Readonly<Record<Plan, PlanLimits>>;
  logLevel: string;
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

export function loadConfig(env: Env = process.env): Readonly<Config> {
  const keyPrefix = env.KEY_PREFIX === undefined || env.KEY_PREFIX === '' ? 'shelf' : env.KEY_PREFIX;
  if (!/^[a-z][a-z0-9]{1,15}$/.test(keyPrefix)) {
    throw new ConfigError('KEY_PREFIX', 'expected 2-16 lowercase letters or digits, starting with a letter');
  }
  const redisUrl = env.REDIS_URL === undefined || env.REDIS_URL === '' ? null : env.REDIS_URL;
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError('REDIS_URL', 'expected redis://... or rediss://...');
  }
  return Object.freeze({
    database: parseDatabase(env.DATABASE_URL),
    redisUrl,
    redisKeyPrefix: env.REDIS_KEY_PREFIX === undefined || env.REDIS_KEY_PREFIX === '' ? 'shelfapi:' : env.REDIS_KEY_PREFIX,
    host: env.HOST === undefined || env.HOST === '' ? '127.0.0.1' : env.HOST,
    port: parsePort('PORT', env.PORT, 8080),
    opsPort: parsePort('OPS_PORT', env.OPS_PORT, 8081),
    keyPrefix,
    planLimits: Object.freeze(parsePlanLimits(env.PLAN_LIMITS)),
    logLevel: env.LOG_LEVEL === undefined || env.LOG_LEVEL === '' ? 'info' : env.LOG_LEVEL,
  });
}
