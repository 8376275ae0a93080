/**
 * `serve` checks its ports before it opens the store: a port another program holds would otherwise be
 * found only at listen, after a demo seed had printed a one-time key and a sign-in link pointing at that
 * other program. The check binds each port and lets it go at once; a program that takes the port in the
 * moment between is still caught at listen.
 */
import { createServer } from 'node:net';
import type { Config } from '../config.js';

export class PortInUseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PortInUseError';
  }
}

/** Whether host:port can be bound now. Port 0 (any free port) always can. */
function canListen(host: string, port: number): Promise<boolean> {
  if (port === 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port to suggest instead: free now, not one of `avoid`, in steps of 10 from the busy one (8080 -> 8090). */
async function suggestion(host: string, busy: number, avoid: readonly number[]): Promise<number> {
  for (let candidate = busy + 10; candidate <= 65535 && candidate < busy + 1000; candidate += 10) {
    if (!avoid.includes(candidate) && (await canListen(host, candidate))) return candidate;
  }
  return busy + 10 <= 65535 ? busy + 10 : 8090;
}

/** How the person ran this, to repeat it in the advice: `npm start` or `shelfapi serve`. */
function howRun(env: NodeJS.ProcessEnv): string {
  return env.npm_lifecycle_event === 'start' ? 'npm start' : 'shelfapi serve';
}

/** Refuses (PortInUseError naming the port and its variable) when PORT or OPS_PORT is taken. */
export async function assertPortsFree(config: Readonly<Config>, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const ports: Array<[string, number]> = [
    ['PORT', config.port],
    ['OPS_PORT', config.opsPort],
  ];
  for (const [variable, port] of ports) {
    if (await canListen(config.host, port)) continue;
    const other = await suggestion(config.host, port, [config.port, config.opsPort]);
    throw new PortInUseError(`port ${port} (${variable}) on ${config.host} is in use: set another with ${variable}=${other} ${howRun(env)}`);
  }
}
