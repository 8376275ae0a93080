/**
 * A request refused for its credentials: a missing, malformed, unknown, revoked or expired key
 * (`unauthorized`), or an account without active Developer API access (`forbidden`). Raised by src/auth,
 * below the surfaces; the HTTP layer gives the code its status and body from its one error table
 * (src/http/errors.ts), so the codes here are names from that table and nothing about HTTP lives here.
 */
export type AuthErrorCode = 'unauthorized' | 'forbidden';

/** An expected refusal, not a fault: no stack, which would cost each refused request 8-12 µs (errors.ts). */
export class AuthError extends Error {
  constructor(
    readonly code: AuthErrorCode,
    message: string,
  ) {
    const stackLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackLimit;
    this.name = 'AuthError';
  }
}
