/**
 * Queries on the hot path (the key lookup of every request, single items), built with Kysely once and then
 * run as prepared statements: building and compiling a query costs more than running it. The SQL still
 * comes from the one Kysely builder, for both dialects; only its execution is direct. On SQLite the
 * statement runs on the store's connection (synchronous, like Kysely's own driver); on PostgreSQL as a
 * named prepared statement through the same pool.
 */
import { createHash } from 'node:crypto';
import { CompiledQuery, type Compilable, type Kysely } from 'kysely';
import type { QueryResultRow } from 'pg';
import type { Store } from './database.js';
import type { Database } from './schema.js';

/** Placeholder values the builder receives for its arguments; found again in the compiled parameters. */
const marker = (i: number) => `\u0000arg${i}\u0000`;

export type PreparedQuery<Args extends unknown[], Row> = (...args: Args) => Promise<Row[]>;

export function prepareQuery<Args extends unknown[], Row>(
  store: Store,
  arity: Args['length'],
  build: (db: Kysely<Database>, ...args: Args) => Compilable<Row>,
): PreparedQuery<Args, Row> {
  const markers = Array.from({ length: arity }, (_, i) => marker(i)) as unknown as Args;
  const compiled = build(store.db, ...markers).compile();
  // Where each argument goes among the parameters; every other parameter is a constant of the query.
  const slots = compiled.parameters.map((p) => (typeof p === 'string' ? markers.indexOf(p as never) : -1));
  const constants = [...compiled.parameters];
  const bind = (args: unknown[]) => slots.map((slot, i) => (slot >= 0 ? args[slot] : constants[i]));
  const sqlite = store.sqlite;
  if (sqlite !== null) {
    const statement = sqlite.prepare(compiled.sql);
    return (...args) => {
      try {
        return Promise.resolve(statement.all(...bind(args)) as Row[]);
      } catch (error) {
        return Promise.reject(error);
      }
    };
  }
  const pool = store.pgPool;
  if (pool !== null) {
    // A named statement: each pooled connection parses and plans it once, not on every request.
    const name = `shelf_${createHash('sha1').update(compiled.sql).digest('hex').slice(0, 16)}`;
    return async (...args) => (await pool.query<Row & QueryResultRow>({ name, text: compiled.sql, values: bind(args) })).rows;
  }
  return async (...args) => (await store.db.executeQuery<Row>(CompiledQuery.raw(compiled.sql, bind(args)))).rows;
}
