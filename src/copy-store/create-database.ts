/**
 * A `--to` database that does not exist yet (a newcomer's `postgres://.../newcomer_copy`): copy-store makes
 * it when the role may create databases, and says so; otherwise it stops with the command that makes it.
 * The database is made from the server's maintenance database (`postgres`, else `template1`) with the same
 * host, role and options. A copy that then fails drops the database it made, so the target is left as it
 * was found: absent.
 */
import pg from 'pg';
import { InputError } from '../errors/input-error.js';
import { shownUrl } from './shown-url.js';

/** PostgreSQL's SQLSTATE for "database ... does not exist". */
const INVALID_CATALOG_NAME = '3D000';
const INSUFFICIENT_PRIVILEGE = '42501';
const MAINTENANCE_DATABASES = ['postgres', 'template1'];

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Whether the error says the URL's database does not exist. */
export function isMissingDatabase(error: unknown): boolean {
  return codeOf(error) === INVALID_CATALOG_NAME;
}

/** The database a postgres:// URL names (its path), or null when it names none. */
export function databaseOf(url: string): string | null {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  return name === '' ? null : name;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The command that makes the database, with the URL's host and port (run as a role that may). */
function createdbCommand(url: string, database: string): string {
  const u = new URL(url);
  const parts = ['createdb'];
  if (u.hostname !== '') parts.push('-h', u.hostname);
  if (u.port !== '') parts.push('-p', u.port);
  parts.push(database);
  return parts.join(' ');
}

/** Runs `statement` on the first maintenance database that exists; the error of the last tried otherwise. */
async function onMaintenanceDatabase(url: string, statement: string): Promise<void> {
  let last: unknown = null;
  for (const maintenance of MAINTENANCE_DATABASES) {
    const client = new pg.Client({ connectionString: withDatabase(url, maintenance), connectionTimeoutMillis: 10_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query(statement);
      return;
    } catch (error) {
      last = error;
      if (!isMissingDatabase(error)) break;
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  throw last;
}

/**
 * Makes the database `url` names, which does not exist. Refuses with an InputError naming `createdb` when
 * the role may not (or the server would not): nothing is made then.
 */
export async function createTargetDatabase(url: string): Promise<string> {
  const database = databaseOf(url);
  if (database === null) throw new InputError(`the target ${shownUrl(url)} names no database that exists; nothing was changed`);
  try {
    await onMaintenanceDatabase(url, `create database ${quoted(database)}`);
    return database;
  } catch (error) {
    const role = new URL(url).username || 'this role';
    const reason =
      codeOf(error) === INSUFFICIENT_PRIVILEGE
        ? `${decodeURIComponent(role)} may not create databases`
        : `it could not be created (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
    throw new InputError(
      `the target database "${database}" does not exist, and ${reason}: make it with \`${createdbCommand(url, database)}\` ` +
        `as a role that may create databases (or CREATE DATABASE ${quoted(database)} in psql), then copy again; nothing was changed`,
    );
  }
}

/** Drops a database createTargetDatabase made, after a failed copy; false when it could not be. */
export async function dropCreatedDatabase(url: string, database: string): Promise<boolean> {
  try {
    await onMaintenanceDatabase(url, `drop database if exists ${quoted(database)} with (force)`);
    return true;
  } catch {
    // Before PostgreSQL 13 there is no FORCE; the copy's own connections are closed by now.
    return onMaintenanceDatabase(url, `drop database if exists ${quoted(database)}`).then(
      () => true,
      () => false,
    );
  }
}
