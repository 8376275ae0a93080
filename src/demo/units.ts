/** Time spans in milliseconds, and the two roundings every generated row uses. */

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** Dollars and cents. */
export const round2 = (x: number): number => Math.round(x * 100) / 100;

/** ISO 8601 UTC with milliseconds, the API's timestamp format. */
export const iso = (ms: number): string => new Date(Math.floor(ms)).toISOString();
