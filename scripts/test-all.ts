/**
 * `npm test`: every pass of the suite, in two lanes side by side, each lane's passes one after another.
 * The passes spend much of their time waiting (child servers starting, PostgreSQL, Redis, pip), so two lanes
 * on a 2-core machine take a little over half the time of one; every test file still runs alone within its
 * lane, and each file has its own databases and Redis key space (test/helpers/private-services.ts), so the
 * lanes share nothing but the servers. dist/ is compiled once before the lanes start: the tests run the built
 * CLI, and two lanes must not compile at once.
 *
 * Each line of output is prefixed with its lane; a summary at the end names each pass, its time and result.
 * The exit code is 0 only when every pass passed. `npm run test:sqlite` (and the others) still run one pass.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';

const LANES: Record<string, string[]> = {
  sqlite: ['test:sqlite', 'test:client'],
  postgres: ['test:postgres', 'test:python'],
};

const build = spawnSync('npx', ['tsc', '-b', 'tsconfig.build.json'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

const results: Array<{ pass: string; code: number | null; seconds: number }> = [];

function runPass(lane: string, pass: string): Promise<number | null> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', pass], { stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => process.stdout.write(`[${lane}] ${line}\n`));
    }
    child.once('close', (code) => {
      results.push({ pass, code, seconds: Math.round((Date.now() - started) / 1000) });
      resolve(code);
    });
  });
}

async function runLane(lane: string, passes: string[]): Promise<boolean> {
  let ok = true;
  // A failed pass does not stop its lane: the next pass may show more of what is wrong.
  for (const pass of passes) if ((await runPass(lane, pass)) !== 0) ok = false;
  return ok;
}

const outcomes = await Promise.all(Object.entries(LANES).map(([lane, passes]) => runLane(lane, passes)));
process.stdout.write('\nnpm test:\n');
for (const r of results) process.stdout.write(`  ${r.pass.padEnd(14)} ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`} in ${r.seconds} s\n`);
process.exit(outcomes.every(Boolean) ? 0 : 1);
