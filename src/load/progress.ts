/**
 * How long-running writes (load, seed, import) tell a display how far they are. The writers know nothing
 * of terminals: they report sections and row counts, and the command line decides how to show them.
 */

export interface ProgressSink {
  /** A section of the work begins; `total` is its row count when known up front, else null. */
  start(section: string, total: number | null): void;
  /**
   * `done` rows of the current section are through. `fraction` (0..1) is given when the writer knows how
   * far it is without knowing the row count (bytes of a file read, items of a generator walked).
   */
  update(done: number, fraction?: number): void;
  /** The current section is complete: `done` rows, or null for a step that has no rows to count. */
  end(done: number | null): void;
}

export const silentProgress: ProgressSink = { start() {}, update() {}, end() {} };

/**
 * A lazy section (the demo generator) may say its size, or how far through it the reader is: a generator
 * knows how many items it walks but not how many price records they yield.
 */
export interface ProgressHint {
  readonly size?: number;
  fraction?(): number;
}

/** Rows of a section when known without walking it: an array's length, or the size a lazy section gives. */
export function sectionSize(value: unknown): number | null {
  if (Array.isArray(value)) return value.length;
  const size = (value as ProgressHint | null | undefined)?.size;
  return typeof size === 'number' && Number.isSafeInteger(size) && size >= 0 ? size : null;
}

/** How far through a lazy section the reader is, when it can say. */
export function sectionFraction(value: unknown): (() => number) | undefined {
  const hint = value as ProgressHint | null | undefined;
  if (typeof hint?.fraction !== 'function') return undefined;
  return () => hint.fraction!();
}

/** Runs a step with no rows to count (a statistics refresh) as its own section, so a display never sits silent on it. */
export async function step<T>(progress: ProgressSink, section: string, work: () => Promise<T>): Promise<T> {
  progress.start(section, null);
  const result = await work();
  progress.end(null);
  return result;
}
