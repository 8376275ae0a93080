/**
 * The start of every key of one account: its hash tag, so every key an admission touches shares one cluster
 * slot. An admission names seven of them: built once and added to, not formatted seven times (accountKey's
 * join was 1.4% of a PostgreSQL + Redis item GET's request thread, 2026-11-28).
 */
export function accountTag(prefix: string, accountId: number): string {
  return `${prefix}{a:${accountId}}:`;
}

/** A key of one account: under its hash tag. */
export function accountKey(prefix: string, accountId: number, ...parts: Array<string | number>): string {
  return accountTag(prefix, accountId) + parts.join(':');
}
