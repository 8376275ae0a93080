/** A dataset refused: one line naming the section and row, and nothing of the dataset written. */
import { InputError } from '../errors/input-error.js';
import { isConstraintViolation } from '../store/constraint-error.js';

export class DatasetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatasetError';
  }
}

/**
 * Runs a rule of the services (shared with the CLI and the settings screen), naming the row when it
 * refuses, or when a constraint of the store refuses its write (another writer took its email meanwhile).
 * Any other failure (the store gone, locked, timed out) is not the row's fault and goes up as it is.
 */
export async function rowRule<T>(where: string, rule: () => Promise<T>): Promise<T> {
  try {
    return await rule();
  } catch (error) {
    if (error instanceof InputError || (error instanceof Error && isConstraintViolation(error))) {
      throw new DatasetError(`${where}: ${error.message}`);
    }
    throw error;
  }
}
