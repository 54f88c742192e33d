import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../sandbox/free-port.js';
import { trackProcessGroup } from '../../sandbox/process-group.js';

/** moto's server on loopback, as the deploy test uses it: one endpoint for every AWS service. */
export interface Moto {
  /** `http://localhost:PORT`: the CDK CLI needs a host name here (on `127.0.0.1`, moto reads a template URL's host as a bucket named "127"). */
  readonly endpoint: string;
  /** The leader of its process group. */
  readonly pid: number;
  stop(): Promise<void>;
}

/** moto cannot be started: it or Python is not installed, or its server does not answer. */
export class MotoUnavailableError extends Error {
  override readonly name = 'MotoUnavailableError';
}

const LAUNCHER = fileURLToPath(new URL('moto_server.py', import.meta.url));
const READY_TIMEOUT_MS = 30_000;
const READY_POLL_MS = 200;
const INSTALL_HINT =
  "The deploy test needs moto 5 with its server (Python): `pip install 'moto[server]>=5.2'`, then run it again " +
  '(PYTHON=... names another interpreter than python3).';

export interface MotoOptions {
  /** The Python interpreter with moto installed: `PYTHON` from the environment, else `python3`. */
  python?: string;
  /** The loopback port; a free one by default. */
  port?: number;
}

/**
 * Starts moto's server (test/deploy/moto_server.py: moto with CloudFormation's `.fifo` naming) on a
 * free loopback port, in a process group of its own, and resolves once it answers.
 */
export async function startMoto(options: MotoOptions = {}): Promise<Moto> {
  const python = options.python ?? process.env.PYTHON ?? 'python3';
  const check = spawnSync(python, ['-c', 'import moto.server, flask'], { encoding: 'utf8' });
  if (check.error || check.status !== 0) {
    const reason = check.error ? `${python} was not found` : check.stderr.trim().split('\n').at(-1);
    throw new MotoUnavailableError(`${reason}. ${INSTALL_HINT}`);
  }
  const port = options.port ?? (await freePort());
  const child = spawn(python, [LAUNCHER, '-H', '127.0.0.1', '-p', String(port)], {
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const group = trackProcessGroup(child);
  let errors = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    errors = (errors + chunk.toString()).slice(-4_000);
  });
  const endpoint = `http://localhost:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) {
      await group.stop();
      throw new MotoUnavailableError(`moto's server exited (${child.exitCode}) at start:\n${errors}`);
    }
    // Bounded: something else on the port may accept and never answer.
    const answered = await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(2_000) }).then(
      (response) => response.ok,
      () => false,
    );
    if (answered) break;
    if (Date.now() > deadline) {
      await group.stop();
      throw new MotoUnavailableError(
        `moto's server did not answer on ${endpoint} within ${READY_TIMEOUT_MS} ms:\n${errors}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
  return { endpoint, pid: group.pid, stop: () => group.stop() };
}
