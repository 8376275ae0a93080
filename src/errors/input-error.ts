/**
 * Bad input: a clear one-line reason, and nothing written. `field` names the input it concerns, so the
 * settings screen can show the message beside that field; the command line prints the message alone.
 * Raised by the services (and the dataset loader), below every caller that shows them.
 */
export type InputField = 'name' | 'scopes' | 'expiry' | 'stopOld' | 'addresses' | 'key' | null;

export class InputError extends Error {
  constructor(
    message: string,
    readonly field: InputField = null,
  ) {
    super(message);
    this.name = 'InputError';
  }
}

/**
 * Several refusals of one request, each at its field, so that a form can be mended in one go rather than
 * one field a submission. Its message is all of theirs, for a caller that shows one line (the command line).
 */
export class InputErrors extends InputError {
  constructor(readonly errors: readonly InputError[]) {
    super(errors.map((e) => (/[.!?]$/.test(e.message) ? e.message : `${e.message}.`)).join(' '), errors[0]?.field ?? null);
    this.name = 'InputErrors';
  }
}

/** Throws what `problems` holds: nothing, the one refusal as it is, or all of them at once. */
export function throwInputErrors(problems: readonly InputError[]): void {
  if (problems.length === 1) throw problems[0]!;
  if (problems.length > 1) throw new InputErrors(problems);
}

/**
 * No such thing for this caller: a missing id, or one that belongs to another account. Both read the same,
 * so an owner cannot learn whether another account's key exists (the screen answers 404 for either).
 */
export class NotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotFoundError';
  }
}
