/**
 * Bad input: a clear one-line reason, and nothing written. `field` names the input it concerns, so the
 * settings screen can show the message beside that field; the command line prints the message alone.
 * Raised by the services (and the dataset loader), below every caller that shows them.
 */
export type InputField = 'name' | 'scopes' | 'expiry' | 'stopOld' | 'key' | null;

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
 * No such thing for this caller: a missing id, or one that belongs to another account. Both read the same,
 * so an owner cannot learn whether another account's key exists (the screen answers 404 for either).
 */
export class NotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotFoundError';
  }
}
