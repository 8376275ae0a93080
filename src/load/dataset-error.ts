/** A dataset row refused: its section, row and field, and the value refused; and a service's refusal named after its row. */
import { InputError } from '../errors/input-error.js';
import { isConstraintViolation } from '../store/constraint-error.js';

export class DatasetError extends Error {
  /** The field holding the refused value, when one does. */
  readonly field: string | null;
  /** The value refused (undefined when the row has none to name). */
  readonly value: unknown;
  /**
   * The store refused a write (a constraint): on PostgreSQL that ends the transaction, so no later row can
   * be checked. Never expected (every rule is checked by a read before the write); the last line of defence.
   */
  readonly fatal: boolean;

  constructor(message: string, detail: { field?: string; value?: unknown; fatal?: boolean } = {}) {
    super(message);
    this.name = 'DatasetError';
    this.field = detail.field ?? null;
    this.value = detail.value;
    this.fatal = detail.fatal === true;
  }
}

/**
 * Runs a rule of the services (shared with the CLI and the settings screen), naming the row when it
 * refuses, or when a constraint of the store refuses its write (another writer took its email meanwhile).
 * Any other failure (the store gone, locked, timed out) is not the row's fault and goes up as it is.
 */
export async function rowRule<T>(where: string, rule: () => Promise<T>, detail: { field?: string; value?: unknown } = {}): Promise<T> {
  try {
    return await rule();
  } catch (error) {
    if (error instanceof InputError) throw new DatasetError(`${where}: ${error.message}`, detail);
    if (error instanceof Error && isConstraintViolation(error)) throw new DatasetError(`${where}: ${error.message}`, { ...detail, fatal: true });
    throw error;
  }
}
