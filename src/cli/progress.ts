/**
 * Progress of long work (seed, load, import, serve --demo-if-empty), always on stderr: stdout may carry the
 * one JSON document of --json, or the summary a script reads.
 *
 * On a terminal: one line redrawn in place (bar, percent when the size is known, counts, rows/s, ETA),
 * at most ten times a second, replaced by a one-line summary when the section ends. Elsewhere (a log file,
 * a pipe, a container's log) redrawing would leave a mess of carriage returns, so it writes plain lines:
 * one when a section starts and one when it ends, and in between one when another 10% is done but no
 * more often than every 5 seconds (a short section stays two lines), and one a minute whatever the
 * progress, so a slow section still shows it is alive. Those lines are held back for the first 2 seconds
 * and dropped if the work fails within them: a quick failure is a refusal (a bad row, a file that is not
 * CSV), and a refused command prints its refusal and nothing else, like every other command.
 */
import type { ProgressSink } from '../load/progress.js';

/** The part of a stream the display uses; process.stderr in production, a collecting stub in tests. */
export interface ProgressStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export interface ProgressOptions {
  stream?: ProgressStream;
  /** Milliseconds; the tests drive it by hand. */
  clock?: () => number;
  /** Names the work on plain lines (`load: catalogue done, ...`): a log holds other programs' lines too. */
  label?: string;
  /**
   * No plain lines. For --json: the caller is a program, and stderr then holds nothing but a failure's
   * reason. A terminal still gets its bar: a person is watching it.
   */
  quiet?: boolean;
}

export interface ProgressDisplay extends ProgressSink {
  /** The work succeeded: writes any plain lines still held back. */
  finish(): void;
  /**
   * The work failed: clears a half-drawn terminal line, so the error message that follows starts at the
   * left margin, and drops plain lines still held back.
   */
  abandon(): void;
}

const REDRAW_MS = 100;
const HOLD_MS = 2000;
const PLAIN_MIN_MS = 5000;
const PLAIN_MAX_MS = 60_000;
/** Below this a rate is noise (3 rows in 1 ms is not "3,000 rows/s" of anything). */
const RATE_AFTER_MS = 500;
const BAR_WIDTH = 24;
const BLOCK = 5;
const CLEAR_LINE = '\r\x1b[K';

interface Section {
  name: string;
  total: number | null;
  startedAt: number;
  done: number;
  fraction: number | undefined;
  counted: boolean;
  lastDrawAt: number;
  lastPlainAt: number;
  lastPlainTenth: number;
  frame: number;
}

export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

function rows(n: number): string {
  return `${formatCount(n)} ${n === 1 ? 'row' : 'rows'}`;
}

/** 0:07, 12:34, 1:02:03: a clock reads faster than "1h 2m 3s" on a line that keeps changing. */
export function formatClock(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

/** A finished duration, with units: it is read once, not watched. */
function formatElapsed(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** How far a section is, 0..1, when it can be known: the writer's own fraction, else rows of a known total. */
function fractionOf(s: Section): number | undefined {
  if (s.fraction !== undefined) return Math.min(1, Math.max(0, s.fraction));
  if (s.total === null) return undefined;
  return s.total === 0 ? 1 : Math.min(1, s.done / s.total);
}

function rate(s: Section, now: number): number | undefined {
  const elapsed = now - s.startedAt;
  return elapsed >= RATE_AFTER_MS && s.done > 0 ? (s.done * 1000) / elapsed : undefined;
}

function eta(s: Section, now: number): number | undefined {
  const f = fractionOf(s);
  const elapsed = now - s.startedAt;
  if (f === undefined || f <= 0 || f >= 1 || elapsed <= 0) return undefined;
  return (elapsed * (1 - f)) / f;
}

function counts(s: Section): string {
  return s.total !== null ? `${formatCount(s.done)}/${rows(s.total)}` : rows(s.done);
}

function bar(s: Section): string {
  const f = fractionOf(s);
  if (f !== undefined) {
    const filled = Math.floor(f * BAR_WIDTH);
    return `[${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}]`;
  }
  // Size unknown: a block moving back and forth shows the work is alive without claiming how far it is.
  const span = BAR_WIDTH - BLOCK;
  const step = s.frame % (2 * span);
  const at = step <= span ? step : 2 * span - step;
  return `[${'░'.repeat(at)}${'█'.repeat(BLOCK)}${'░'.repeat(span - at)}]`;
}

/** The line redrawn on a terminal. */
function liveLine(s: Section, now: number): string {
  const parts = [s.name, bar(s)];
  const f = fractionOf(s);
  // Floor, not round: 100% only once the section has really ended.
  if (f !== undefined) parts.push(`${String(Math.floor(f * 100)).padStart(3)}%`);
  if (s.counted) parts.push(counts(s));
  const r = rate(s, now);
  if (r !== undefined) parts.push(`${formatCount(r)} rows/s`);
  const left = eta(s, now);
  if (left !== undefined) parts.push(`ETA ${formatClock(left)}`);
  else if (!s.counted) parts.push(formatElapsed(now - s.startedAt));
  return parts.join('  ');
}

function startText(s: Section): string {
  return s.total !== null ? `${s.name} started, ${rows(s.total)}` : `${s.name} started`;
}

function updateText(s: Section, now: number): string {
  const parts = [`${s.name} ${counts(s)}`];
  const f = fractionOf(s);
  if (f !== undefined) parts.push(`${Math.floor(f * 100)}%`);
  const r = rate(s, now);
  if (r !== undefined) parts.push(`${formatCount(r)} rows/s`);
  const left = eta(s, now);
  if (left !== undefined) parts.push(`ETA ${formatClock(left)}`);
  return parts.join(', ');
}

function endText(s: Section, now: number): string {
  const elapsed = now - s.startedAt;
  if (!s.counted) return `${s.name} done in ${formatElapsed(elapsed)}`;
  const r = rate(s, now);
  return `${s.name} done, ${rows(s.done)} in ${formatElapsed(elapsed)}${r !== undefined ? ` (${formatCount(r)} rows/s)` : ''}`;
}

/** Cut to the terminal's width: a line that wraps can no longer be redrawn in place. */
function fit(text: string, columns: number | undefined): string {
  if (columns === undefined || columns < 10) return text;
  const chars = [...text];
  return chars.length < columns ? text : `${chars.slice(0, columns - 2).join('')}…`;
}

export function progressDisplay(options: ProgressOptions = {}): ProgressDisplay {
  const stream = options.stream ?? process.stderr;
  const clock = options.clock ?? Date.now;
  const tty = stream.isTTY === true;
  const silent = !tty && options.quiet === true;
  const prefix = options.label !== undefined ? `${options.label}: ` : '';
  const createdAt = clock();
  let section: Section | null = null;
  // A line drawn on the terminal without a newline yet: it must be cleared before anything else is written.
  let live = false;
  // Plain lines not yet written (null once the hold is over).
  let held: string[] | null = [];

  const release = () => {
    if (held === null) return;
    for (const line of held) stream.write(line);
    held = null;
  };
  const plain = (text: string) => {
    const line = `${prefix}${text}\n`;
    if (held === null) stream.write(line);
    else held.push(line);
  };
  // Every event checks the hold, not only those that write: a quiet stretch must not keep lines back.
  const checkHold = (now: number) => {
    if (held !== null && now - createdAt >= HOLD_MS) release();
  };
  const draw = (s: Section, now: number) => {
    stream.write(`${CLEAR_LINE}${fit(liveLine(s, now), stream.columns)}`);
    live = true;
    s.lastDrawAt = now;
    s.frame++;
  };

  const finishOpen = (done: number | null) => {
    const s = section;
    if (s === null) return;
    section = null;
    if (done !== null) {
      s.done = done;
      s.counted = true;
    }
    if (silent) return;
    const now = clock();
    checkHold(now);
    const text = endText(s, now);
    if (tty) {
      stream.write(`${CLEAR_LINE}${text}\n`);
      live = false;
    } else {
      plain(text);
    }
  };

  return {
    start(name, total) {
      // A writer that starts a section without ending the last one has still finished it.
      if (section !== null) finishOpen(section.counted ? section.done : null);
      const now = clock();
      checkHold(now);
      section = {
        name,
        total,
        startedAt: now,
        done: 0,
        fraction: undefined,
        counted: total !== null,
        lastDrawAt: now,
        lastPlainAt: now,
        lastPlainTenth: 0,
        frame: 0,
      };
      if (silent) return;
      if (tty) draw(section, now);
      else plain(startText(section));
    },

    update(done, fraction) {
      const s = section;
      if (s === null || silent) return;
      s.done = done;
      s.counted = true;
      if (fraction !== undefined) s.fraction = fraction;
      const now = clock();
      checkHold(now);
      if (tty) {
        if (now - s.lastDrawAt >= REDRAW_MS) draw(s, now);
        return;
      }
      const f = fractionOf(s);
      // The end line reports a finished section; a 100% line just before it would say the same thing.
      if (f !== undefined && f >= 1) return;
      const tenth = f === undefined ? 0 : Math.floor(f * 10);
      const since = now - s.lastPlainAt;
      if ((tenth > s.lastPlainTenth && since >= PLAIN_MIN_MS) || since >= PLAIN_MAX_MS) {
        s.lastPlainTenth = Math.max(s.lastPlainTenth, tenth);
        s.lastPlainAt = now;
        plain(updateText(s, now));
      }
    },

    end(done) {
      finishOpen(done);
    },

    finish() {
      if (section !== null) finishOpen(section.counted ? section.done : null);
      release();
    },

    abandon() {
      section = null;
      held = null;
      if (live) stream.write(CLEAR_LINE);
      live = false;
    },
  };
}

/** Runs work with a display that is finished or abandoned as the work ends. */
export async function withProgress<T>(options: ProgressOptions, work: (progress: ProgressDisplay) => Promise<T>): Promise<T> {
  const progress = progressDisplay(options);
  let result: T;
  try {
    result = await work(progress);
  } catch (error) {
    progress.abandon();
    throw error;
  }
  progress.finish();
  return result;
}
