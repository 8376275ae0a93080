/**
 * Conditional requests (RFC 9110 section 13): a strong ETag on every 200, and 304 Not Modified when the
 * request's If-None-Match names it. A JSON answer's tag is a digest of its exact bytes, so equal tags mean
 * equal bodies. The streamed CSV export cannot be hashed before it is sent; its tag names the data version
 * and the filters instead, which decide its bytes.
 */
import { hash } from 'node:crypto';

export function strongEtag(body: string | Buffer): string {
  // One call, no Hash object, as for the key's hash (api-key.ts): every 200 is hashed.
  return `"${hash('sha256', body, 'base64url').slice(0, 32)}"`;
}

/** The export's tag: the same data version and the same filters give the same file. */
export function exportEtag(dataVersion: number, filters: Record<string, unknown>): string {
  const canonical = JSON.stringify(Object.keys(filters).sort().map((name) => [name, filters[name]]));
  return strongEtag(`export:v${dataVersion}:${canonical}`);
}

/**
 * If-None-Match uses the weak comparison (RFC 9110 section 13.1.2): `W/` is ignored on either side, `*`
 * matches any current representation, and several tags may be listed, separated by commas.
 */
export function ifNoneMatchMatches(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const value = Array.isArray(header) ? header.join(',') : header;
  if (value.trim() === '*') return true;
  const opaque = etag.replace(/^W\//, '');
  for (const candidate of value.match(/(?:W\/)?"[^"]*"/g) ?? []) {
    if (candidate.replace(/^W\//, '') === opaque) return true;
  }
  return false;
}
