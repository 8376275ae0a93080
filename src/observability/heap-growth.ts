/**
 * How far V8 lets a serving process's heap grow past what is live before it collects. By default V8 sets the
 * next full collection at up to 4 times the live heap when the process allocates fast and has memory to
 * spare (its heap limit here is 4 GB, from the machine's 24 GB). Under 200 connections a request outlives a
 * young-generation collection or two, so its objects are promoted and die in the old generation: at 20,000
 * items heap in use peaked at 231 and 277 MB and RSS at 350 and 389 MB, while a heap snapshot under the same
 * load held 68 MB live (docs/performance.md, "Memory under load"). A fixed factor of 1.5 holds the heap near
 * what is live at the price of more frequent full collections, which mark only what is live. 1.25 held it
 * nearer (peak RSS 224 MB against 243 at 1.5, 200 connections, 20,000 items) but cost a PostgreSQL + Redis
 * item GET 135-137 µs of CPU against 107-118 at 1.5 and 104-107 at 2 (a server filling its answers kept
 * per id promotes them all): 1.5 keeps most of the memory and most of the speed.
 *
 * Set by the server itself, at start (`--heap-growing-percent` is read at every full collection, so setting
 * it from inside takes effect): an operator has no flag to remember. NODE_OPTIONS or a node flag given on the
 * command line still wins: the server leaves the setting alone when the process was started with one.
 */
import { setFlagsFromString } from 'node:v8';

export const HEAP_GROWING_PERCENT = 50;

const FLAG = '--heap-growing-percent';

/** Sets V8's heap growing factor to 1 + HEAP_GROWING_PERCENT / 100, unless the process was started with one. */
export function limitHeapGrowth(
  execArgv: ReadonlyArray<string> = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): boolean {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)].some((arg) => arg.replace(/_/g, '-').startsWith(FLAG));
  if (given) return false;
  setFlagsFromString(`${FLAG}=${HEAP_GROWING_PERCENT}`);
  return true;
}
