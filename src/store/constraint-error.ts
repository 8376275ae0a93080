/**
 * Whether a store error is a constraint of the data refusing a write (a unique index, a check, a foreign
 * key), as opposed to the store failing (gone, locked, timed out): only the first says something about the
 * row being written. SQLite names it in the code (SQLITE_CONSTRAINT_*), PostgreSQL in its SQLSTATE class 23.
 */
export function isConstraintViolation(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && (code.startsWith('SQLITE_CONSTRAINT') || /^23[0-9A-Z]{3}$/.test(code));
}
