/** Times for people, in the security log's details and on the command line: `2026-11-24 10:27 UTC`. */
export function utcMinute(at: string | number): string {
  const iso = typeof at === 'number' ? new Date(at).toISOString() : at;
  return `${iso.replace('T', ' ').slice(0, 16)} UTC`;
}
