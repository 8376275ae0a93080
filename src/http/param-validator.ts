/**
 * Validation of query strings and path parameters, driven by the routes' TypeBox schemas (decisions.md
 * section 2). Ajv's type coercion accepts "+5", " 5" and "1e2" as integers, which the contract refuses,
 * so this small validator reads the same schemas with the contract's rules: unknown, repeated or empty
 * parameters are refused by name; integers are ASCII digits only.
 */
import type { FastifySchemaCompiler } from 'fastify';
import { badRequest } from './errors.js';

interface PropertySchema {
  type?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  default?: unknown;
  'x-invalid'?: string;
}

interface ObjectSchema {
  properties?: Record<string, PropertySchema>;
}

const DIGITS = /^[0-9]+$/;

function checkValue(part: 'query' | 'path', name: string, raw: string, schema: PropertySchema): unknown {
  const what = part === 'query' ? `Query parameter '${name}'` : `Path parameter '${name}'`;
  if (schema.type === 'integer') {
    const value = Number(raw);
    const min = schema.minimum ?? 0;
    const max = schema.maximum ?? Number.MAX_SAFE_INTEGER;
    if (!DIGITS.test(raw) || value < min || value > max) {
      throw badRequest(`${what} must be a decimal integer from ${min} to ${max}; got ${JSON.stringify(raw)}.`);
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

export const paramValidatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  // Request headers are documented (If-None-Match) but never refused: a header the API does not know is
  // ignored, as HTTP expects, and the value of If-None-Match is compared, not validated.
  if (httpPart === 'headers') return (data: unknown) => ({ value: data });
  if (httpPart !== 'querystring' && httpPart !== 'params') {
    throw new Error(`no validator for ${String(httpPart)}: routes of this API take no ${String(httpPart)}`);
  }
  const part = httpPart === 'querystring' ? 'query' : 'path';
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
              ? `Unknown query parameter '${name}': this endpoint takes no query parameters.`
              : `Unknown query parameter '${name}'; this endpoint takes: ${names.join(', ')}.`,
          );
        }
        if (Array.isArray(value)) throw badRequest(`Query parameter '${name}' is given more than once.`);
        if (typeof value !== 'string') throw badRequest(`Parameter '${name}' has an invalid value.`);
        if (value === '') throw badRequest(`${part === 'query' ? 'Query' : 'Path'} parameter '${name}' must not be empty.`);
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
