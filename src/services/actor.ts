/**
 * Who makes a change, for the security log: the account owner through the settings screen (with the
 * client address the request came from), or an operator through the command line.
 */
export type Actor = { kind: 'owner'; accountId: number; address: string | null } | { kind: 'operator' };

export const OPERATOR: Actor = Object.freeze({ kind: 'operator' });
