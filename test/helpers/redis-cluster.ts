/**
 * A private three-master Redis Cluster on spare local ports, for the tests that run the meter on Redis
 * Cluster. Each node is its own redis-server (no persistence, its cluster state in a temporary directory);
 * `redis-cli --cluster create` splits the 16384 slots between them. Nodes announce 127.0.0.1, so the client
 * reaches them as announced (no NAT map).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { redisCli } from './private-services.js';
import { freePorts, waitFor } from './server-process.js';

const run = promisify(execFile);

export interface ClusterNode {
  port: number;
  url: string;
  /** The slot ranges this master serves, [first, last] inclusive. */
  slots: Array<[number, number]>;
}

export interface PrivateRedisCluster {
  /** Seed URLs of every master, as REDIS_CLUSTER_URLS takes them (comma-separated). */
  urls: string[];
  nodes: ClusterNode[];
  /** The master serving a key, by its hash slot (CLUSTER KEYSLOT). */
  nodeOf(key: string): Promise<ClusterNode>;
  /** Scripts (EVAL and EVALSHA) each master has run since it started, by port. */
  scriptsRun(): Promise<Map<number, number>>;
  /** SIGSTOP one node: its connections stay open and it answers nothing (a hung host). */
  pause(port: number): void;
  /** SIGCONT: the node goes on with whatever it had received meanwhile. */
  resume(port: number): void;
  /** SIGKILL one node: its connections close and its port refuses new ones (a crashed master). */
  kill(port: number): Promise<void>;
  /** Stops every node (SIGKILL, after SIGCONT) and removes the temporary directory. */
  stop(): Promise<void>;
}

export async function startRedisCluster(masters = 3): Promise<PrivateRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'shelfapi-redis-cluster-'));
  const children = new Map<number, ChildProcess>();
  const stop = async () => {
    await Promise.all(
      [...children.values()].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGCONT');
            child.kill('SIGKILL');
          }),
      ),
    );
    children.clear();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const ports = await freePorts(masters);
    for (const port of ports) {
      const child = spawn(
        'redis-server',
        [
          '--port', String(port),
          '--bind', '127.0.0.1',
          '--cluster-enabled', 'yes',
          '--cluster-config-file', join(dir, `nodes-${port}.conf`),
          // A master that stops answering must not take the accounts of the others with it (docs/operations.md, "Redis Cluster").
          '--cluster-require-full-coverage', 'no',
          '--save', '',
          '--appendonly', 'no',
          '--dir', dir,
          '--daemonize', 'no',
        ],
        { stdio: 'ignore' },
      );
      children.set(port, child);
    }
    for (const port of ports) await waitFor(async () => (await redisCli(port, 'ping')).trim() === 'PONG', `redis cluster node on ${port}`);
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], {
      encoding: 'utf8',
    });
    for (const port of ports) {
      await waitFor(async () => (await redisCli(port, 'cluster', 'info')).includes('cluster_state:ok'), `cluster_state:ok on ${port}`);
    }
    const nodes: ClusterNode[] = ports.map((port) => ({ port, url: `redis://127.0.0.1:${port}`, slots: [] }));
    // CLUSTER NODES, one line per node: id, ip:port@bus-port, flags, master, ping, pong, epoch, link, slots...
    for (const line of (await redisCli(ports[0] ?? 0, 'cluster', 'nodes')).trim().split('\n')) {
      const fields = line.split(' ');
      const port = Number(/:(\d+)@/.exec(fields[1] ?? '')?.[1]);
      const node = nodes.find((n) => n.port === port);
      for (const range of fields.slice(8)) {
        const [first, last] = range.split('-').map(Number);
        if (node !== undefined && first !== undefined) node.slots.push([first, last ?? first]);
      }
    }
    const signal = (port: number, name: NodeJS.Signals) => {
      const child = children.get(port);
      if (child === undefined) throw new Error(`no cluster node on ${port}`);
      child.kill(name);
    };
    return {
      urls: nodes.map((n) => n.url),
      nodes,
      async nodeOf(key) {
        const slot = Number((await redisCli(ports[0] ?? 0, 'cluster', 'keyslot', key)).trim());
        const node = nodes.find((n) => n.slots.some(([first, last]) => slot >= first && slot <= last));
        if (node === undefined) throw new Error(`no master serves slot ${slot}`);
        return node;
      },
      async scriptsRun() {
        const out = new Map<number, number>();
        for (const { port } of nodes) {
          const stats = await redisCli(port, 'info', 'commandstats');
          const calls = [...stats.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
          out.set(port, calls);
        }
        return out;
      },
      kill: (port) =>
        new Promise<void>((resolve) => {
          const child = children.get(port);
          if (child === undefined || child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
      pause: (port) => signal(port, 'SIGSTOP'),
      resume: (port) => signal(port, 'SIGCONT'),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
