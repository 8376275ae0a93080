/**
 * Where a serving process writes its log: standard output, asynchronously (a log line never waits for the
 * disk or the pipe), with a bound on what may wait to be written. pino's default destination is the same
 * asynchronous writer without the bound: when whatever reads standard output falls behind (a terminal, a
 * log shipper, a container runtime on a busy host), every request's line waits in the process's heap,
 * about 270 bytes a request, for as long as it takes to drain: memory that grows with the load and only
 * comes back once the reader catches up. Past the bound, lines are dropped and counted instead
 * (shelfapi_log_lines_dropped_total): losing log lines while the log is stuck beats being killed for memory.
 * On a terminal the lines are made readable first (serverLogDestination).
 */
import { isatty } from 'node:tty';
import pino from 'pino';
import pinoPretty from 'pino-pretty';

/** At most this much log waits in the process: about 60,000 request lines, seconds of full load. */
export const LOG_BACKLOG_MAX_BYTES = 16 * 1024 * 1024;

export interface LogDestinationOptions {
  /** File descriptor to write to: standard output unless given. */
  fd?: number;
  maxBytes?: number;
  /** Called once for every line dropped because the backlog was full. */
  onDrop?: () => void;
}

export function boundedLogDestination(options: LogDestinationOptions = {}): ReturnType<typeof pino.destination> {
  const destination = pino.destination({
    dest: options.fd ?? 1,
    sync: false,
    minLength: 0,
    maxLength: options.maxBytes ?? LOG_BACKLOG_MAX_BYTES,
  });
  const onDrop = options.onDrop;
  if (onDrop !== undefined) destination.on('drop', () => onDrop());
  return destination;
}

export interface ServerLogOptions extends LogDestinationOptions {
  /** One readable line a record instead of JSON; by default when the destination is a terminal. */
  pretty?: boolean;
}

/**
 * The serving process's log: JSON lines for whatever collects them (a pipe, a file, a container runtime),
 * and, when a person watches it in a terminal (`npm start`), the same records as readable lines (time,
 * level, message, fields), through the same bound. Each line is handed over already written and redacted
 * (src/http/app.ts cuts keys and tokens out before the stream sees it), so a pretty line shows no more.
 */
export function serverLogDestination(options: ServerLogOptions = {}): { write(line: string): void } {
  const destination = boundedLogDestination(options);
  if (!(options.pretty ?? isatty(options.fd ?? 1))) return destination;
  return pinoPretty({ destination, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}
