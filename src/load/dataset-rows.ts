/**
 * A dataset row against its section's schema (src/domain/dataset.ts): the first problem, worded for the
 * person who wrote the file, and the columns the row is stored as. Both read the schema, so a field added
 * there is checked, named in errors and stored without a second list to keep in step.
 */
import type { TObject, TSchema } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import { Check } from 'typebox/value';
import { DATASET_SECTIONS, notesOf, type DatasetSection } from '../domain/dataset.js';
import { canonicalTimestamp } from '../domain/timestamps.js';
import type { Row } from './bulk-insert.js';

export type Obj = Record<string, unknown>;

interface Field {
  name: string;
  schema: TSchema;
  required: boolean;
}

interface SectionSchema {
  validator: Validator;
  fields: Field[];
}

function fieldsOf(schema: TObject): Field[] {
  const required = new Set<string>(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, field]) => ({ name, schema: field, required: required.has(name) }));
}

const SCHEMAS = Object.fromEntries(
  Object.entries(DATASET_SECTIONS).map(([section, schema]) => [section, { validator: Compile(schema), fields: fieldsOf(schema) }]),
) as Record<DatasetSection, SectionSchema>;

/**
 * Why `row` is not a row of `section`, as a phrase naming the field ("field 'upc' must be 6 to 14 ASCII
 * digits"), or null when it is one. Unknown fields are named first, then fields in the schema's order.
 */
export function rowProblem(section: DatasetSection, row: unknown): string | null {
  const { validator, fields } = SCHEMAS[section];
  // Compiled: the check every row of a large load goes through. The walk below only words a refusal.
  if (validator.Check(row)) return null;
  if (typeof row !== 'object' || row === null || Array.isArray(row)) return 'must be an object';
  for (const name of Object.keys(row)) {
    // Own fields only: `in` finds Object.prototype members, so "__proto__" or "constructor" passed as known.
    if (!fields.some((f) => f.name === name)) return `unknown field '${name}'`;
  }
  for (const field of fields) {
    const value = (row as Obj)[field.name];
    if (value === undefined) {
      if (field.required) return `field '${field.name}' is required`;
      continue;
    }
    if (!Check(field.schema, value)) return `field '${field.name}' ${notesOf(field.schema).expected}`;
  }
  return 'does not match the dataset format';
}

const snakeCase = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * The columns a checked row of `section` is stored as, one per stored field of the schema (named in
 * snake_case), every row of a section with the same columns: a field the row leaves out is null, or the
 * load's time for createdAt and updatedAt. Timestamps are stored canonical, flags as 1 or 0, account refs
 * as the id `accountId` gives. Derived fields are not stored.
 */
export function columnsOf(section: DatasetSection, row: Obj, nowIso: string, accountId: (field: string, ref: string) => number): Row {
  const out: Row = {};
  for (const { name, schema } of SCHEMAS[section].fields) {
    const notes = notesOf(schema);
    if (notes.derived) continue;
    const value = row[name];
    if (notes.accountColumn !== undefined) out[notes.accountColumn] = accountId(name, value as string);
    else if (value === undefined || value === null) out[snakeCase(name)] = notes.defaultsToNow ? nowIso : null;
    else if (notes.timestamp) out[snakeCase(name)] = canonicalTimestamp(value as string);
    else if (typeof value === 'boolean') out[snakeCase(name)] = value ? 1 : 0;
    else out[snakeCase(name)] = value as string | number;
  }
  return out;
}
