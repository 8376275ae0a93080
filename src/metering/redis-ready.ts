/** Waiting for a Redis client (single or cluster) to connect, for the meter and the owners' statistics alike. */
import type { Cluster, Redis } from 'ioredis';
import { MeterUnavailableError } from './meter.js';

/** Resolves once `redis` is connected, or rejects after the timeout (start-up waits for Redis). */
export async function redisReady(redis: Redis | Cluster, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new MeterUnavailableError(new Error('Redis is not reachable'))), timeoutMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
