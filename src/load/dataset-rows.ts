/**
 * A dataset row against its section's schema (src/domain/dataset.ts): the first problem, worded for the
 * person who wrote the file, and the columns the row is stored as. Both read the schema, so a field added
 * there is checked, named in errors and stored without a second list to keep in step.
 */
import type { TObject, TSchema } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import { Check } from 'typebox/value';
import { DATASET_SECTIONS, notesOf, type DatasetSection, type FieldNotes } from '../domain/dataset.js';
import { canonicalTimestamp } from '../domain/timestamps.js';
import type { Row } from './bulk-insert.js';

export type Obj = Record<string, unknown>;

interface Field {
  name: string;
  schema: TSchema;
  required: boolean;
  notes: FieldNotes;
  /** The column a stored field is written to: its name in snake_case, or the one an account ref names. */
  column: string;
}

interface SectionSchema {
  validator: Validator;
  fields: Field[];
  stored: Field[];
}

const snakeCase = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function sectionSchema(schema: TObject): SectionSchema {
  const required = new Set<string>(schema.required ?? []);
  const fields = Object.entries(schema.properties).map(([name, field]): Field => {
    const notes = notesOf(field);
    return { name, schema: field, required: required.has(name), notes, column: notes.accountColumn ?? snakeCase(name) };
  });
  return { validator: Compile(schema), fields, stored: fields.filter((f) => f.notes.derived !== true) };
}

const SCHEMAS = Object.fromEntries(
  Object.entries(DATASET_SECTIONS).map(([section, schema]) => [section, sectionSchema(schema)]),
) as Record<DatasetSection, SectionSchema>;

/** What is wrong with a row: the field at fault (null for the row as a whole), its value, and why. */
export interface RowFault {
  field: string | null;
  value: unknown;
  /** A phrase naming the field ("field 'upc' must be 6 to 14 ASCII digits"). */
  problem: string;
}

/**
 * Why `row` is not a row of `section`, as a phrase naming the field ("field 'upc' must be 6 to 14 ASCII
 * digits"), or null when it is one. Unknown fields are named first, then fields in the schema's order.
 */
export function rowProblem(section: DatasetSection, row: unknown): string | null {
  return rowFault(section, row)?.problem ?? null;
}

/** rowProblem, with the field at fault and its value. */
export function rowFault(section: DatasetSection, row: unknown): RowFault | null {
  const { validator, fields } = SCHEMAS[section];
  // Compiled: the check every row of a large load goes through. The walk below only words a refusal.
  if (validator.Check(row)) return null;
  if (typeof row !== 'object' || row === null || Array.isArray(row)) return { field: null, value: row, problem: 'must be an object' };
  for (const [name, value] of Object.entries(row)) {
    // Own fields only: `in` finds Object.prototype members, so "__proto__" or "constructor" passed as known.
    if (!fields.some((f) => f.name === name)) return { field: name, value, problem: `unknown field '${name}'` };
  }
  for (const field of fields) {
    const value = (row as Obj)[field.name];
    if (value === undefined) {
      if (field.required) return { field: field.name, value: null, problem: `field '${field.name}' is required` };
      continue;
    }
    if (!Check(field.schema, value)) return { field: field.name, value, problem: `field '${field.name}' ${field.notes.expected}` };
  }
  return { field: null, value: row, problem: 'does not match the dataset format' };
}

/** The columns columnsOf writes for `section`, in order. */
export function storedColumns(section: DatasetSection): string[] {
  return SCHEMAS[section].stored.map((f) => f.column);
}

/** Each field of `section` with the phrase a refusal of its value names. */
export function fieldPhrases(section: DatasetSection): Array<[field: string, expected: string]> {
  return SCHEMAS[section].fields.map((f) => [f.name, f.notes.expected]);
}

/**
 * The columns a checked row of `section` is stored as, one per stored field of the schema (named in
 * snake_case), every row of a section with the same columns: a field the row leaves out is null, or the
 * load's time for createdAt and updatedAt. Timestamps are stored canonical, flags as 1 or 0, account refs
 * as the id `accountId` gives (refusing row `where` when there is none). Derived fields are not stored.
 */
export function columnsOf(
  section: DatasetSection,
  row: Obj,
  where: string,
  nowIso: string,
  accountId: (where: string, field: string, ref: unknown) => number,
): Row {
  // Built up from {} in the same order for every row: the rows share one shape, which keeps them fast to
  // make and to read (starting from a spread copy of a template cost a fifth more CPU on a large load).
  const out: Row = {};
  for (const { name, notes, column } of SCHEMAS[section].stored) {
    const value = row[name];
    if (notes.accountColumn !== undefined) out[column] = accountId(where, name, value);
    else if (value === undefined || value === null) out[column] = notes.defaultsToNow ? nowIso : null;
    else if (notes.timestamp) out[column] = canonicalTimestamp(value as string);
    else if (typeof value === 'boolean') out[column] = value ? 1 : 0;
    else out[column] = value as string | number;
  }
  return out;
}
