/** Bad operator input: a clear one-line reason, and nothing written. */
export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputError';
  }
}
