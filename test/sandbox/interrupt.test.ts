import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_LOGS_FILE, DEFAULT_TRACES_FILE } from '../../cli/local-command.js';
import { groupAlive } from '../support/process-group.js';

describe('interrupting a process that runs DynamoDB Local', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`takes the JVM down on ${signal}`, async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/hold-dynamodb-local.ts'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      const { pid } = JSON.parse(line) as { pid: number };
      expect(groupAlive(pid)).toBe(true);

      child.kill(signal);
      const [code, received] = await once(child, 'exit');
      expect(code === null ? received : code).not.toBe(0); // it still dies of the signal
      await expect.poll(() => groupAlive(pid), { timeout: 60_000 }).toBe(false);
    });
  }
});

/** Pids of the live processes whose environment carries `mark`: what a command started and left behind. */
function processesMarked(mark: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'utf8').includes(mark);
      } catch {
        return false; // gone meanwhile, or not ours to read
      }
    })
    .map(Number);
}

describe.skipIf(process.platform !== 'linux')('interrupting `oncely local`', () => {
  let scratch: string;
  let running: ChildProcess | undefined;
  beforeEach(() => {
    scratch = mkdtempSync(join(tmpdir(), 'oncely-local-'));
  });
  afterEach(async () => {
    // A test that failed before its signal leaves the command running: stop it as a user would.
    if (running && running.exitCode === null && running.signalCode === null) {
      const exited = once(running, 'exit');
      running.kill('SIGTERM');
      await exited;
    }
    rmSync(scratch, { recursive: true, force: true });
  });

  /** The cloud assemblies in `directory` (tsx keeps its cache there too). */
  const assemblies = (directory: string) =>
    readdirSync(directory).filter((name) => name.startsWith('oncely-assembly-'));

  /** `oncely local` on the example shop; its temporary files (the cloud assembly) go to `scratch`. */
  function oncelyLocal(mark: string) {
    const readyFile = join(scratch, 'ready.json');
    const tmp = join(scratch, 'tmp');
    mkdirSync(tmp);
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'bin/oncely.ts', 'local', '--app-dir', '.', '--ready-file', readyFile],
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, TMPDIR: tmp, ONCELY_TEST_MARK: mark } },
    );
    running = child;
    const lines = createInterface({ input: child.stdout });
    const seen: string[] = [];
    lines.on('line', (line) => seen.push(line));
    /** Resolves at the first line starting with `prefix`, printed already or to come; rejects if the command ends before. */
    const printed = (prefix: string) =>
      new Promise<void>((resolve, reject) => {
        if (seen.some((line) => line.startsWith(prefix))) resolve();
        lines.on('line', (line) => line.startsWith(prefix) && resolve());
        child.once('exit', (code) =>
          reject(new Error(`oncely local exited (${code}) before printing "${prefix}"`)),
        );
      });
    return { child, printed, readyFile, tmp };
  }

  it('stops everything on SIGTERM once ready: the JVM, the functions, the cloud assembly, the ready file', async () => {
    const mark = randomUUID();
    const { child, printed, readyFile, tmp } = oncelyLocal(mark);
    const exited = once(child, 'exit');
    await printed('Press Ctrl-C');
    const { endpoints, traces, console, logs } = JSON.parse(readFileSync(readyFile, 'utf8')) as {
      endpoints: Record<string, string>;
      traces?: { endpoint: string; file: string };
      console?: { url: string };
      logs?: { file: string };
    };
    // The functions' output is kept, emptied at the start, in the app's directory.
    expect(logs?.file).toBe(join(process.cwd(), DEFAULT_LOGS_FILE));
    expect(existsSync(String(logs?.file))).toBe(true);
    expect(Object.keys(endpoints).sort()).toEqual(['dynamodb', 'edge', 'lambda', 'sqs']);
    // With OpenTelemetry's SDK installed (here, the repository's), traces are on by default.
    expect(traces?.file).toBe(join(process.cwd(), DEFAULT_TRACES_FILE));
    expect(traces?.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/traces$/);
    expect(assemblies(tmp)).toHaveLength(1);
    // The console (docs/console.md), on 127.0.0.1: its page, and the overview it reads.
    expect(console?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#token=[\w-]{32}$/);
    await printed(`  Console        ${console?.url}`);
    expect((await fetch(String(console?.url))).headers.get('content-type')).toMatch(/^text\/html/);
    expect(await (await fetch(new URL('api/overview', console?.url))).json()).toMatchObject({
      queues: [{ role: 'queue' }, { role: 'dlq' }],
    });

    child.kill('SIGTERM');
    expect(await exited).toEqual([0, null]);
    expect(existsSync(readyFile)).toBe(false);
    expect(assemblies(tmp)).toEqual([]);
    // tsx's esbuild service leaves when it sees its parent gone: a moment after the exit.
    await expect.poll(() => processesMarked(mark), { timeout: 60_000 }).toEqual([]);
    await expect(fetch(endpoints.dynamodb)).rejects.toThrow();
    await expect(fetch(String(traces?.endpoint), { method: 'POST' })).rejects.toThrow();
    await expect(fetch(String(console?.url))).rejects.toThrow();
  }, 240_000);

  it('stops what had started on SIGINT during the start-up', async () => {
    const mark = randomUUID();
    const { child, printed, readyFile, tmp } = oncelyLocal(mark);
    const exited = once(child, 'exit');
    await printed('Starting');
    // Once the synth runs: its process group is what the signal must take down.
    await expect.poll(() => assemblies(tmp).length, { timeout: 60_000, interval: 20 }).toBe(1);

    child.kill('SIGINT');
    expect(await exited).toEqual([0, null]);
    expect(existsSync(readyFile)).toBe(false);
    expect(assemblies(tmp)).toEqual([]);
    // tsx's esbuild service leaves when it sees its parent gone: a moment after the exit.
    await expect.poll(() => processesMarked(mark), { timeout: 60_000 }).toEqual([]);
  }, 240_000);
});
