/**
 * Reading the fields of a posted form. A field a form of ours always sends but that is missing or of the
 * wrong shape means the request did not come from our form: 400, nothing changed.
 */
import { PageError } from './page-errors.js';

export type FormBody = Record<string, string | string[] | undefined>;

export function formBody(body: unknown): FormBody {
  if (typeof body !== 'object' || body === null) return {};
  return body as FormBody;
}

/** A single text field ('' when absent; the first value when sent twice). */
export function textField(body: FormBody, name: string): string {
  const value = body[name];
  if (Array.isArray(value)) return value[0] ?? '';
  return value ?? '';
}

/** Every value of a repeated field (checkboxes). */
export function listField(body: FormBody, name: string): string[] {
  const value = body[name];
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

/** The key id of a path, or 404 for anything that is not one (as for a key that is not the owner's). */
export function keyIdParam(params: unknown): number {
  const raw = (params as { id?: unknown }).id;
  if (typeof raw !== 'string' || !/^[1-9][0-9]{0,14}$/.test(raw)) throw new PageError('not_found');
  return Number(raw);
}

/** The one-time nonce of a create or roll form: 32 hex characters, or the request is not from our form. */
export function nonceField(body: FormBody): string {
  const nonce = textField(body, 'nonce');
  if (!/^[0-9a-f]{32}$/.test(nonce)) throw new PageError('bad_request', 'nonce');
  return nonce;
}

/** One optional query field: absent or empty is undefined; sent twice (an array) is no form or link of ours. */
export function queryText(query: unknown, name: string): string | undefined {
  const raw = (query as Record<string, unknown> | null)?.[name];
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') throw new PageError('bad_request', name);
  return raw;
}

/** A list's `?page=` (1 when absent); anything but a page number is a page that is not there (404). */
export function pageParam(query: unknown): number {
  const raw = queryText(query, 'page');
  if (raw !== undefined && !/^[1-9][0-9]{0,5}$/.test(raw)) throw new PageError('not_found');
  return raw === undefined ? 1 : Number(raw);
}
