/** Tells a store that cannot be reached (answer 503, retry shortly) from a bug (answer 500). */
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR|FULL|READONLY|NOTADB|CORRUPT|PROTOCOL)/;
const NODE_NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

export function isStoreUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (SQLITE_UNAVAILABLE.test(code) || NODE_NETWORK.has(code)) return true;
    // PostgreSQL: connection exceptions (08), insufficient resources (53), operator intervention (57).
    if (/^(08|53|57)[0-9A-Z]{3}$/.test(code)) return true;
  }
  if (error.name === 'TypeError' && /database connection is not open/i.test(error.message)) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error/i.test(
    error.message,
  );
}
