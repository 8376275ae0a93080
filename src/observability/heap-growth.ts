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
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

export const HEAP_GROWING_PERCENT = 50;

/** Whether node was started with a flag `name` matches (on its command line or in NODE_OPTIONS), `_` read as `-`. */
function givenToNode(name: RegExp, execArgv: ReadonlyArray<string>, nodeOptions: string): boolean {
  return [...execArgv, ...nodeOptions.split(/\s+/)].some((arg) => name.test(arg.replace(/_/g, '-')));
}

const FLAG = '--heap-growing-percent';

/** Sets V8's heap growing factor to 1 + HEAP_GROWING_PERCENT / 100, unless the process was started with one. */
export function limitHeapGrowth(
  execArgv: ReadonlyArray<string> = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): boolean {
  if (givenToNode(/^--heap-growing-percent/, execArgv, nodeOptions)) return false;
  setFlagsFromString(`${FLAG}=${HEAP_GROWING_PERCENT}`);
  return true;
}

/** The young generation's size (new space: two semi-spaces) past which it stops growing. */
export const YOUNG_GENERATION_CAP_MB = 32;

const newSpaceBytes = (): number => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;

/**
 * Keeps V8's young generation at YOUNG_GENERATION_CAP_MB, Node 20's own limit. Node 24's V8 lets it grow to
 * 128 MB, which took a server at 200 connections (20,000 items) to a peak RSS of 409 MB against 243 on Node
 * 20 (docs/performance.md). `--max-semi-space-size` would bound it, but only as a flag given to node at
 * start; V8 reads `--semi-space-growth-factor` whenever the young generation would grow, so after each
 * collection this sets it to 1 (no growth) when doubling would pass the cap, and back to 2 (V8's default) when not.
 * The observer is told of a collection between turns of the event loop: a collection that comes before it has
 * been told of the last can still double the young generation once past the cap (34.25 MB seen under load).
 * Left alone when node was started with a semi-space flag. Returns a stop function (tests).
 */
export function capYoungGeneration(
  execArgv: ReadonlyArray<string> = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): (() => void) | null {
  if (givenToNode(/^--(max|min)-semi-space-size/, execArgv, nodeOptions)) return null;
  const cap = YOUNG_GENERATION_CAP_MB * 1024 * 1024;
  let growing = true;
  const check = () => {
    // V8 grows the young generation by the factor at a collection: growth is allowed only while doubling
    // stays within the cap (from 16.6 MB it went to 33.25, over it, when growth stopped only at the cap).
    const mayGrow = newSpaceBytes() * 2 <= cap;
    if (mayGrow === growing) return;
    setFlagsFromString(mayGrow ? '--semi-space-growth-factor=2' : '--semi-space-growth-factor=1');
    growing = mayGrow;
  };
  const observer = new PerformanceObserver(check);
  observer.observe({ entryTypes: ['gc'] });
  check();
  return () => observer.disconnect();
}

/**
 * Turns off V8's allocation-site pretenuring: objects are always made in the young generation. V8 decides to
 * make a site's objects directly in the old generation when, at a collection of a full young generation,
 * nearly all of them survived; under load a burst at the wrong moment (requests held up together) sent a
 * request's own objects there for the rest of the process's life. Those starts (a third to a half of them)
 * ran 20-40% slower: 35-47 full collections in 13 s against 8-9, V8's helper threads 16 µs a request against
 * 6 (docs/performance.md). Left alone when node was started with the flag either way.
 */
export function keepAllocationsYoung(
  execArgv: ReadonlyArray<string> = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): boolean {
  if (givenToNode(/^--(no-)?allocation-site-pretenuring/, execArgv, nodeOptions)) return false;
  setFlagsFromString('--no-allocation-site-pretenuring');
  return true;
}
