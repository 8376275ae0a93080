/**
 * Where a serving process writes its log: standard output, asynchronously (a log line never waits for the
 * disk or the pipe), with a bound on what may wait to be written. pino's default destination is the same
 * asynchronous writer without the bound: when whatever reads standard output falls behind (a terminal, a
 * log shipper, a container runtime on a busy host), every request's line waits in the process's heap,
 * about 270 bytes a request, for as long as it takes to drain: memory that grows with the load and only
 * comes back once the reader catches up. Past the bound, lines are dropped and counted instead
 * (shelfapi_log_lines_dropped_total): losing log lines while the log is stuck beats being killed for memory.
 */
import pino from 'pino';

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
