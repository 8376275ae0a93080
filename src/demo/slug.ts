/** Slugs: a char loop with a small fold table; regexes per row would dominate a million-row run. */

const FOLD: Readonly<Record<string, string>> = (() => {
  const table: Record<string, string> = {};
  const groups: [string, string][] = [['àáâãäåāă', 'a'], ['çćč', 'c'], ['èéêëēė', 'e'], ['ìíîïī', 'i'],
    ['ñń', 'n'], ['òóôõöøō', 'o'], ['ùúûüū', 'u'], ['ýÿ', 'y'], ['ß', 'ss'], ['æ', 'ae'], ['œ', 'oe'], ['šś', 's'],
    ['žź', 'z']];
  for (const [chars, to] of groups) for (const c of chars) table[c] = to;
  return table;
})();

/** Lower-case ASCII letters and digits, accents folded, every other run of characters one dash. */
export function slugPart(s: string): string {
  let out = '';
  let dash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let piece: string | undefined;
    if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) piece = s[i];
    else if (c >= 65 && c <= 90) piece = String.fromCharCode(c + 32);
    else if (c >= 128) {
      const lower = (s[i] as string).toLowerCase();
      piece = FOLD[lower];
      if (piece === undefined) {
        const base = lower.normalize('NFD').charCodeAt(0);
        if ((base >= 97 && base <= 122) || (base >= 48 && base <= 57)) piece = String.fromCharCode(base);
      }
    }
    if (piece === undefined) {
      dash = out.length > 0;
    } else {
      if (dash) out += '-';
      out += piece;
      dash = false;
    }
  }
  return out;
}
