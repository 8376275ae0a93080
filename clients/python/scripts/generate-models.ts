/**
 * Writes clients/python/src/shelfapi/models.py from openapi.json: a TypedDict for every resource the API
 * answers with (field names as in the API), a page type for every list, and the error codes. No
 * OpenAPI-to-Python generator is at hand (none in the package mirrors), and the document is small and
 * regular, so this reads exactly the subset of JSON Schema it uses and fails loudly on anything else.
 *
 *   node --import tsx clients/python/scripts/generate-models.ts           (npm run openapi runs it)
 *   node --import tsx clients/python/scripts/generate-models.ts --check   (exit 1 when models.py is stale)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const DOCUMENT = `${ROOT}openapi.json`;
const OUTPUT = `${ROOT}clients/python/src/shelfapi/models.py`;
const PREFIX = '/developer/v1';

interface Schema {
  type?: string;
  format?: string;
  enum?: unknown[];
  anyOf?: Schema[];
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean;
  description?: string;
}

interface Operation {
  operationId?: string;
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}

interface Document {
  paths: Record<string, { get?: Operation }>;
}

/**
 * What each JSON operation answers, by operationId: the model of its resource, and whether the body is
 * a page of them (`{ data: [...], pagination }`), one wrapped in `data`, or the resource itself (`/me`).
 * A new operation must be named here: a Python name is a choice the generator should not guess.
 */
const RESOURCES: Record<string, { model: string; shape: 'page' | 'data' | 'body'; page?: string }> = {
  me: { model: 'Me', shape: 'body' },
  catalogue: { model: 'CatalogueItem', shape: 'page', page: 'CataloguePage' },
  catalogueItem: { model: 'CatalogueItem', shape: 'data' },
  prices: { model: 'PriceRow', shape: 'page', page: 'PricesPage' },
  price: { model: 'PriceRow', shape: 'data' },
  collection: { model: 'CollectionItem', shape: 'page', page: 'CollectionPage' },
  collectionValue: { model: 'CollectionValue', shape: 'data' },
  collectionItem: { model: 'CollectionItem', shape: 'data' },
  listings: { model: 'Listing', shape: 'page', page: 'ListingsPage' },
  offers: { model: 'Offer', shape: 'page', page: 'OffersPage' },
  transactions: { model: 'Transaction', shape: 'page', page: 'TransactionsPage' },
};
/** Operations answering something other than JSON, which the client reads itself (the CSV export). */
const NOT_JSON = new Set(['exportPrices']);

const SCALARS: Record<string, string> = { string: 'str', integer: 'int', number: 'float', boolean: 'bool' };

function fail(where: string, message: string): never {
  throw new Error(`generate-models: ${where}: ${message} (teach clients/python/scripts/generate-models.ts)`);
}

const pascal = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1);

/** Models in the order they are first met, each with its Python source; a name met twice must be the same. */
class Models {
  readonly classes = new Map<string, string>();

  /** The Python type of `schema`; objects become classes named `name`. */
  type(schema: Schema, name: string, where: string): string {
    if (schema.anyOf) {
      const members = schema.anyOf.map((member, i) => this.type(member, name, `${where}.anyOf[${i}]`));
      const literals = members.filter((m) => m.startsWith('Literal['));
      // Literal['a'] | Literal['b'] reads better as Literal['a', 'b'].
      const merged = literals.length > 1 ? [`Literal[${literals.map((m) => m.slice(8, -1)).join(', ')}]`, ...members.filter((m) => !literals.includes(m))] : members;
      return merged.map((m) => (m === 'null' ? 'None' : m)).join(' | ');
    }
    if (schema.enum) {
      if (!schema.enum.every((v) => typeof v === 'string')) fail(where, 'an enum of other than strings');
      return `Literal[${schema.enum.map((v) => pyString(v as string)).join(', ')}]`;
    }
    switch (schema.type) {
      case 'null':
        return 'null';
      case 'array':
        if (!schema.items) fail(where, 'an array without items');
        return `list[${this.type(schema.items, name, `${where}.items`)}]`;
      case 'object':
        this.object(schema, name, where);
        return name;
      default: {
        const scalar = SCALARS[schema.type ?? ''];
        if (!scalar) fail(where, `type ${JSON.stringify(schema.type)}`);
        return scalar;
      }
    }
  }

  private object(schema: Schema, name: string, where: string): void {
    if (schema.additionalProperties !== false) fail(where, 'an object open to other properties');
    const required = new Set(schema.required ?? []);
    const lines = [`class ${name}(TypedDict):`];
    if (schema.description && schema.description !== 'Success') lines.push(`    """${docText(schema.description)}"""`, '');
    for (const [field, property] of Object.entries(schema.properties ?? {})) {
      // NotRequired needs Python 3.11 (or typing_extensions, a second dependency); the API has no optional field.
      if (!required.has(field)) fail(`${where}.${field}`, 'an optional property');
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(field)) fail(`${where}.${field}`, 'a property name that is not a Python identifier');
      const type = this.type(property, name + pascal(field), `${where}.${field}`);
      if (property.description) lines.push(`    #: ${docText(property.description)}`);
      lines.push(`    ${field}: ${type}`);
    }
    if (lines.length === 1) lines.push('    pass');
    const source = lines.join('\n');
    const earlier = this.classes.get(name);
    if (earlier !== undefined && earlier !== source) fail(where, `${name} is described two different ways`);
    this.classes.set(name, source);
  }
}

/** A Python string literal. */
function pyString(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
}

/** Descriptions go into comments and docstrings: one line, no closing triple quote. */
function docText(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/"""/g, "'''").trim();
}

function jsonSchema(op: Operation, status: string, where: string): Schema {
  const schema = op.responses[status]?.content?.['application/json']?.schema;
  if (!schema) fail(where, `no application/json ${status} answer`);
  return schema;
}

export function generate(doc: Document): string {
  const models = new Models();
  const errorCodes: string[] = [];
  const seen = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    const op = item.get;
    if (!op) fail(path, 'a path without GET');
    const id = op.operationId;
    if (!id) fail(path, 'an operation without an operationId');
    const where = `${path.replace(PREFIX, '')} (${id})`;
    seen.add(id);
    for (const [status, response] of Object.entries(op.responses)) {
      if (!/^[45]/.test(status)) continue;
      const error = response.content?.['application/json']?.schema.properties?.error;
      const codes = (error?.anyOf ?? (error ? [error] : [])).flatMap((s) => s.enum ?? []);
      if (codes.length === 0) fail(`${where} ${status}`, 'an error answer without its codes');
      for (const code of codes) if (!errorCodes.includes(code as string)) errorCodes.push(code as string);
    }
    if (NOT_JSON.has(id)) continue;
    const resource = RESOURCES[id];
    if (!resource) fail(where, 'an operation the generator has no model name for (add it to RESOURCES)');
    const body = jsonSchema(op, '200', where);
    if (resource.shape === 'body') {
      models.type(body, resource.model, where);
    } else if (resource.shape === 'data') {
      const data = body.properties?.data;
      if (!data || Object.keys(body.properties ?? {}).length !== 1) fail(where, 'expected { data }');
      models.type(data, resource.model, `${where}.data`);
    } else {
      const items = body.properties?.data?.items;
      const pagination = body.properties?.pagination;
      if (!items || !pagination || Object.keys(body.properties ?? {}).length !== 2) fail(where, 'expected { data: [...], pagination }');
      models.type(items, resource.model, `${where}.data`);
      models.type(pagination, 'Pagination', `${where}.pagination`);
      models.classes.set(
        resource.page!,
        `class ${resource.page}(TypedDict):\n    """One page of ${path.replace(PREFIX, '')}."""\n\n    data: list[${resource.model}]\n    pagination: Pagination`,
      );
    }
  }
  for (const id of [...Object.keys(RESOURCES), ...NOT_JSON]) if (!seen.has(id)) fail(id, 'named in RESOURCES but not in the document');

  const names = [...models.classes.keys()];
  return [
    '# Generated from openapi.json by clients/python/scripts/generate-models.ts: do not edit.',
    '# Regenerate with `npm run openapi` (or `npm run generate:python`); a test fails while this is stale.',
    '"""Typed models of the shelfapi Developer API\'s answers, field names as the API spells them."""',
    '',
    'from __future__ import annotations',
    '',
    'from typing import Literal, TypedDict',
    '',
    '__all__ = [',
    ...['ErrorCode', 'ERROR_CODES', ...names].map((n) => `    ${pyString(n)},`),
    ']',
    '',
    '#: Every `error` code the API documents for its answers.',
    `ErrorCode = Literal[${errorCodes.map(pyString).join(', ')}]`,
    `ERROR_CODES: tuple[ErrorCode, ...] = (${errorCodes.map(pyString).join(', ')})`,
    '',
    ...[...models.classes.values()].flatMap((source) => ['', source, '']),
  ].join('\n');
}

function main(): void {
  const doc = JSON.parse(readFileSync(DOCUMENT, 'utf8')) as Document;
  const source = generate(doc);
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(OUTPUT, 'utf8');
    } catch {
      // Missing counts as stale.
    }
    if (current !== source) {
      console.error('clients/python/src/shelfapi/models.py is stale: run `npm run generate:python` (or `npm run openapi`)');
      process.exit(1);
    }
    return;
  }
  writeFileSync(OUTPUT, source);
}

main();
