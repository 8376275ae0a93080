/** A store's URL as messages and reports show it: with its password left out (a message never carries a secret). */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}
