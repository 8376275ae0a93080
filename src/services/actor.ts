/**
 * Who makes a change, for the security log: the account owner through the settings screen (with the
 * client address the request came from), an operator through the command line, or GitHub's secret
 * scanning reporting a key it found public (src/http/secret-scanning).
 */
export type Actor = { kind: 'owner'; accountId: number; address: string | null } | { kind: 'operator' } | { kind: 'secret_scanning' };

export const OPERATOR: Actor = Object.freeze({ kind: 'operator' });
export const SECRET_SCANNING: Actor = Object.freeze({ kind: 'secret_scanning' });
