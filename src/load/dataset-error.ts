/** A dataset refused: one line naming the section and row, and nothing of the dataset written. */
import { InputError } from '../errors/input-error.js';

export class DatasetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatasetError';
  }
}

/**
 * Runs a rule of the services (shared with the CLI and the settings screen), naming the row when it
 * refuses. `anyError`: a failure of the write itself names the row too (a constraint of the store).
 */
export async function rowRule<T>(where: string, rule: () => Promise<T>, options: { anyError?: boolean } = {}): Promise<T> {
  try {
    return await rule();
  } catch (error) {
    if (error instanceof InputError || (options.anyError === true && error instanceof Error)) {
      throw new DatasetError(`${where}: ${error.message}`);
    }
    throw error;
  }
}
