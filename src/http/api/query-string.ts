/**
 * The query-string parser the router uses. Fastify's default keeps a value it cannot decode as it came
 * (`?search=%FF` searched for the three characters "%FF"), so a client sending bytes that are not UTF-8
 * got an answer for something it did not ask. This one decodes strictly and marks such a value, so that the
 * parameter validator refuses it by name (400), as it refuses every other invalid value.
 */

/** A value whose percent-encoding is broken or does not decode to UTF-8 (bad bytes, an encoded surrogate). */
export class UndecodableValue {
  constructor(readonly raw: string) {}
}

export type QueryValue = string | UndecodableValue;

function decode(part: string): QueryValue {
  const spaced = part.replaceAll('+', ' ');
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return new UndecodableValue(spaced);
  }
}

/**
 * `a=1&b=2&a=3` as `{ a: ['1', '3'], b: '2' }`, like the default parser. The result has no prototype, so a
 * parameter named `__proto__` or `constructor` is an own property like any other (and refused as unknown).
 */
export function parseQueryString(query: string): Record<string, QueryValue | QueryValue[]> {
  const out = Object.create(null) as Record<string, QueryValue | QueryValue[]>;
  if (query === '') return out;
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    const name = decode(rawName);
    // An undecodable name is kept as written: the validator refuses it as an unknown parameter by that name.
    const key = typeof name === 'string' ? name : name.raw;
    const value = decode(eq === -1 ? '' : pair.slice(eq + 1));
    const known = out[key];
    if (known === undefined) out[key] = value;
    else if (Array.isArray(known)) known.push(value);
    else out[key] = [known, value];
  }
  return out;
}
