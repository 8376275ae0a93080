/** A key of one account: under its hash tag, so every key an admission touches shares one cluster slot. */
export function accountKey(prefix: string, accountId: number, ...parts: Array<string | number>): string {
  return `${prefix}{a:${accountId}}:${parts.join(':')}`;
}
