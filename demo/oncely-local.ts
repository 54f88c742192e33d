import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import type { PipelineResources } from 'oncely/cdk';

/** What `oncely local` writes to its ready file once the sandbox is up (docs/local.md, "The ready file"). */
export interface ReadyFile {
  region: string;
  stackName: string;
  /** `edge` answers for SQS, DynamoDB and Lambda at once. */
  endpoints: { edge: string; sqs: string; dynamodb: string; lambda: string };
  /** The OncelyPipeline's resources; absent when the app has none. */
  resources?: PipelineResources;
  /** Every output of the app's stacks, the app's own included. */
  outputs: Record<string, string>;
  /** The console's address, with its token (docs/console.md); absent when the app has no pipeline. */
  console?: { url: string };
}

export interface OncelyLocalOptions {
  /** The CDK app's directory (its cdk.json). */
  appDirectory: string;
  /** `--env NAME=VALUE` for every function. */
  environment: Record<string, string>;
  /** `--schedule-interval`: runs every schedule (the outbox's sweeper among them) this often instead. */
  scheduleIntervalSeconds?: number;
  /**
   * Each line the command prints: its functions' output (their logs, and their metrics as EMF) and
   * its own messages.
   */
  onOutput: (line: string) => void;
}

export interface OncelyLocal {
  readonly description: ReadyFile;
  /** SIGTERM to the command, then waits until it has stopped everything it started, DynamoDB Local's JVM included. */
  stop(): Promise<void>;
}

/** A synth, a JVM start and a bundle per function: well within this on any laptop. */
const READY_TIMEOUT_MS = 180_000;
const READY_POLL_MS = 100;
/** How long the command may take to stop once told to; then its process group is killed. */
const STOP_GRACE_MS = 30_000;
const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * Runs `oncely local` — the package's own command, as `npx oncely local` would — in a process group
 * of its own, and resolves with its ready file once it is up. A Ctrl-C (or SIGTERM) of this process
 * stops it first, and so does this process exiting: the command then stops what it started itself.
 */
export async function startOncelyLocal(options: OncelyLocalOptions): Promise<OncelyLocal> {
  const directory = mkdtempSync(join(tmpdir(), 'oncely-demo-'));
  const readyFile = join(directory, 'ready.json');
  const variables = Object.entries(options.environment).flatMap(([name, value]) => [
    '--env',
    `${name}=${value}`,
  ]);
  const schedule =
    options.scheduleIntervalSeconds === undefined
      ? []
      : ['--schedule-interval', String(options.scheduleIntervalSeconds)];
  const child = spawn(
    process.execPath,
    [
      oncelyCommand(),
      'local',
      '--app-dir',
      options.appDirectory,
      '--ready-file',
      readyFile,
      ...variables,
      ...schedule,
      // The shop's functions run on the Node.js major of their runtime, as on Lambda: installed once.
      '--install-node',
    ],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let exit: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = signal ? `killed by ${signal}` : `exit code ${code}`;
      resolve();
    });
    child.once('error', (error) => {
      exit = `${error.name}: ${error.message}`;
      resolve();
    });
  });
  const errors: string[] = [];
  createInterface({ input: child.stdout }).on('line', options.onOutput);
  createInterface({ input: child.stderr }).on('line', (line) => {
    errors.push(line);
    options.onOutput(line);
  });

  const signalGroup = (signal: NodeJS.Signals) => {
    if (exit !== undefined || child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // ESRCH: the group is gone already.
    }
  };
  // Gone with this process: the command still stops what it started, on its own.
  const onExit = () => signalGroup('SIGTERM');
  const onSignal = (signal: NodeJS.Signals) => {
    void stop().finally(() => process.kill(process.pid, signal));
  };
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      for (const name of SIGNALS) process.off(name, onSignal);
      signalGroup('SIGTERM');
      let killed = false;
      const kill = setTimeout(() => {
        killed = true;
        signalGroup('SIGKILL');
      }, STOP_GRACE_MS);
      await exited;
      clearTimeout(kill);
      process.off('exit', onExit);
      rmSync(directory, { recursive: true, force: true });
      if (killed) {
        throw new Error(
          `oncely local did not stop within ${STOP_GRACE_MS} ms of SIGTERM and was killed; DynamoDB Local's JVM may be left running.`,
        );
      }
    })());
  process.on('exit', onExit);
  for (const name of SIGNALS) process.once(name, onSignal);

  try {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const description = readReadyFile(readyFile);
      if (description) return { description, stop };
      if (exit !== undefined) {
        throw new Error(
          `oncely local stopped before it was ready (${exit}):\n${errors.slice(-20).join('\n')}`,
        );
      }
      if (Date.now() > deadline) throw new Error(`oncely local was not ready within ${READY_TIMEOUT_MS} ms`);
      await Promise.race([exited, delay(READY_POLL_MS)]);
    }
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}

/** The `oncely` command of the installed package: its `bin`, as npm links it. */
function oncelyCommand(): string {
  const manifest = createRequire(import.meta.url).resolve('oncely/package.json');
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8')) as { bin: { oncely: string } };
  return join(dirname(manifest), bin.oncely);
}

/** The ready file once it is there and complete; undefined while it is not. */
function readReadyFile(path: string): ReadyFile | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return JSON.parse(text) as ReadyFile;
  } catch {
    return undefined; // caught mid-write
  }
}
