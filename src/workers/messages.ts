/** What the primary of `serve --workers` and its workers say to each other over the cluster's IPC channel. */
import type { Readiness } from '../server.js';

/** Primary to worker: are your store and meter reachable? */
export interface ReadinessQuestion {
  type: 'shelfapi:readiness?';
  id: number;
}

/** Worker to primary: the answer to the question with the same id. */
export interface ReadinessAnswer extends Readiness {
  type: 'shelfapi:readiness';
  id: number;
}

export function isReadinessQuestion(message: unknown): message is ReadinessQuestion {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'shelfapi:readiness?';
}

export function isReadinessAnswer(message: unknown): message is ReadinessAnswer {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'shelfapi:readiness';
}

/** Primary to worker: drain (src/server.ts, RunningServer.drain) after `delayMs`, then close. */
export interface DrainOrder {
  type: 'shelfapi:drain';
  delayMs: number;
}

export function isDrainOrder(message: unknown): message is DrainOrder {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'shelfapi:drain';
}
