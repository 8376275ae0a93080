/**
 * Validation of query strings and path parameters, driven by the routes' TypeBox schemas (docs/contract.md,
 * "Parameters"). Ajv's type coercion accepts "+5", " 5" and "1e2" as integers, which the contract refuses,
 * so this small validator reads the same schemas with the contract's rules: unknown, repeated or empty
 * parameters are refused by name; integers are ASCII digits only; a value is text (no control character,
 * nothing that does not decode to UTF-8), where a schema marked `x-white-space` (search) also takes the
 * control characters that are white space (tab, line breaks, NEL): they separate its terms.
 */
import type { FastifySchemaCompiler } from 'fastify';
import { badRequest, echoed } from '../errors.js';
import { UndecodableValue } from './query-string.js';

interface PropertySchema {
  type?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  default?: unknown;
  'x-white-space'?: boolean;
  'x-invalid'?: string;
}

interface ObjectSchema {
  properties?: Record<string, PropertySchema>;
}

const DIGITS = /^[0-9]+$/;
/**
 * C0 controls (NUL, tab, line ends, escape...), DEL and C1 controls, and lone surrogates (a path parameter
 * decoded by the router may hold one). No filter of this API has a use for them, and the stores choke on
 * some (PostgreSQL refuses NUL in text; SQLite's full-text syntax ends a string at NUL).
 */
const NOT_TEXT = /[\p{Cc}\p{Cs}]/u;
/** The same, less the controls that are Unicode white space (U+0009-U+000D, U+0085). */
const NOT_TEXT_NOR_WHITE_SPACE = /(?!\p{White_Space})[\p{Cc}\p{Cs}]/u;

export const TEXT_RULE = 'no control characters (U+0000-U+001F, U+007F-U+009F) and only valid UTF-8 after percent-decoding';
export const TERMS_TEXT_RULE =
  'white space of any kind (space, tab, line breaks, the other Unicode white space) separates terms; other control characters ' +
  '(U+0000-U+001F, U+007F-U+009F) are refused, and the value must be valid UTF-8 after percent-decoding';

function checkText(what: string, raw: string, whiteSpace: boolean): void {
  if ((whiteSpace ? NOT_TEXT_NOR_WHITE_SPACE : NOT_TEXT).test(raw)) {
    throw badRequest(
      whiteSpace
        ? `${what} must not contain control characters other than white space (U+0000-U+001F, U+007F-U+009F, except tab, line breaks and NEL).`
        : `${what} must not contain control characters (U+0000-U+001F, U+007F-U+009F).`,
    );
  }
}

function checkValue(part: 'query' | 'path', name: string, raw: string, schema: PropertySchema): unknown {
  const what = part === 'query' ? `Query parameter '${echoed(name)}'` : `Path parameter '${name}'`;
  checkText(what, raw, schema['x-white-space'] === true);
  if (schema.type === 'integer') {
    const value = Number(raw);
    const min = schema.minimum ?? 0;
    const max = schema.maximum ?? Number.MAX_SAFE_INTEGER;
    if (!DIGITS.test(raw) || value < min || value > max) {
      throw badRequest(`${what} must be a decimal integer from ${min} to ${max}; got ${JSON.stringify(echoed(raw))}.`);
    }
    return value;
  }
  const length = [...raw].length;
  const custom = schema['x-invalid'];
  if (schema.minLength !== undefined && length < schema.minLength) throw badRequest(custom ?? `${what} must not be empty.`);
  if (schema.maxLength !== undefined && length > schema.maxLength) {
    throw badRequest(custom ?? `${what} must be at most ${schema.maxLength} characters.`);
  }
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(raw)) {
    throw badRequest(custom ?? `${what} has an invalid value.`);
  }
  return raw;
}

/** Keywords this validator checks (or that only document), per type; any other keyword fails closed. */
const DOCUMENTING = ['description', 'default', 'examples', 'title'];
const KEYWORDS: Record<string, ReadonlySet<string>> = {
  integer: new Set(['type', 'minimum', 'maximum', ...DOCUMENTING]),
  string: new Set(['type', 'minLength', 'maxLength', 'pattern', 'x-invalid', 'x-white-space', ...DOCUMENTING]),
};
const OBJECT_KEYWORDS = new Set(['type', 'properties', 'additionalProperties', 'required', ...DOCUMENTING]);

/**
 * Refuses, when the routes are built, a schema this validator cannot check in full: a keyword it does not
 * implement (a boolean, a union, an enum, a format...) would otherwise let any value through.
 */
function assertCheckable(schema: unknown, part: 'query' | 'path', url: string): void {
  const fail = (problem: string) => {
    throw new Error(`param-validator cannot check the ${part} schema of ${url}: ${problem}`);
  };
  if (typeof schema !== 'object' || schema === null) return fail('not an object schema');
  const object = schema as Record<string, unknown>;
  for (const keyword of Object.keys(object)) if (!OBJECT_KEYWORDS.has(keyword)) fail(`keyword '${keyword}' on the object`);
  if (object.type !== 'object') fail(`type ${JSON.stringify(object.type)} instead of 'object'`);
  if (object.additionalProperties !== false) fail('additionalProperties must be false (unknown parameters are refused)');
  const properties = (object.properties ?? {}) as Record<string, unknown>;
  // The router guarantees path parameters; nothing would enforce a required query parameter.
  const required = (object.required ?? []) as unknown[];
  if (part === 'query' && required.length > 0) fail('required query parameters are not supported');
  for (const [name, property] of Object.entries(properties)) {
    if (typeof property !== 'object' || property === null) return fail(`'${name}' is not a schema`);
    const type = (property as Record<string, unknown>).type;
    const allowed = typeof type === 'string' ? KEYWORDS[type] : undefined;
    if (allowed === undefined) return fail(`'${name}' has type ${JSON.stringify(type)}; only integer and string are supported`);
    for (const keyword of Object.keys(property)) {
      if (!allowed.has(keyword)) fail(`keyword '${keyword}' on '${name}'`);
    }
  }
}

export const paramValidatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart, url }) => {
  // Request headers are documented (If-None-Match) but never refused: a header the API does not know is
  // ignored, as HTTP expects, and the value of If-None-Match is compared, not validated.
  if (httpPart === 'headers') return (data: unknown) => ({ value: data });
  if (httpPart !== 'querystring' && httpPart !== 'params') {
    throw new Error(`no validator for ${String(httpPart)}: routes of this API take no ${String(httpPart)}`);
  }
  const part = httpPart === 'querystring' ? 'query' : 'path';
  assertCheckable(schema, part, url);
  const properties = (schema as ObjectSchema).properties ?? {};
  const names = Object.keys(properties);
  return (data: unknown) => {
    try {
      const input = (data ?? {}) as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(input)) {
        // Own properties only: a plain lookup would find Object.prototype members, so `?constructor=1`,
        // `?toString=1` or `?__proto__=1` would pass as "known" parameters instead of a 400.
        const property = Object.hasOwn(properties, name) ? properties[name] : undefined;
        if (property === undefined) {
          throw badRequest(
            names.length === 0
              ? `Unknown query parameter '${echoed(name)}': this endpoint takes no query parameters.`
              : `Unknown query parameter '${echoed(name)}'; this endpoint takes: ${names.join(', ')}.`,
          );
        }
        if (Array.isArray(value)) throw badRequest(`Query parameter '${echoed(name)}' is given more than once.`);
        if (value instanceof UndecodableValue) {
          throw badRequest(`Query parameter '${echoed(name)}' is not valid percent-encoded UTF-8.`);
        }
        if (typeof value !== 'string') throw badRequest(`Parameter '${echoed(name)}' has an invalid value.`);
        if (value === '') throw badRequest(`${part === 'query' ? 'Query' : 'Path'} parameter '${echoed(name)}' must not be empty.`);
        out[name] = checkValue(part, name, value, property);
      }
      for (const name of names) {
        const property = properties[name] as PropertySchema;
        if (out[name] === undefined && property.default !== undefined) out[name] = property.default;
      }
      return { value: out };
    } catch (error) {
      return { error: error as Error };
    }
  };
};
