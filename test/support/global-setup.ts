import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { startValkey } from '../../harness/valkey-server.js';
import { startDynamoDbLocal } from '../../sandbox/dynamodb-local.js';
import { installLambdaNode } from '../../sandbox/node-binary.js';
import { startSqsEmulator } from '../../sandbox/sqs-emulator.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    sqsEndpoint: string;
    /** The run's redis-server (Valkey's protocol): the consumer suites' Valkey store keeps its records there. */
    valkeyPort: number;
    /** Where test/support/shared-assembly.ts keeps the run's cloud assemblies, one per app and context. */
    assemblyCache: string;
  }
}

interface Emulators {
  dynamodbEndpoint: string;
  sqsEndpoint: string;
  valkeyPort: number;
  assemblyCache: string;
  stop: () => Promise<void>;
}

/**
 * One set of emulators for every project that names this setup: Vitest runs a project's global setup
 * only when the run has files of that project (the fast tier has none), once per project, in this
 * one process. The projects share the set; the last project's teardown stops it.
 */
const shared = globalThis as { oncelyEmulators?: { started: Promise<Emulators>; users: number } };

async function startEmulators(): Promise<Emulators> {
  // The functions run on Lambda's Node.js major (nodejs24.x): installed once into .oncely/, from
  // the npm registry `npm ci` used. Without it the tests would judge code on another major: fail.
  installLambdaNode(24);
  const dynamodb = await startDynamoDbLocal();
  const sqs = await startSqsEmulator().catch(async (error) => {
    await dynamodb.stop();
    throw error;
  });
  const valkey = await startValkey().catch(async (error) => {
    await sqs.stop();
    await dynamodb.stop();
    throw error;
  });
  const assemblyCache = mkdtempSync(join(tmpdir(), 'oncely-test-assemblies-'));
  return {
    dynamodbEndpoint: dynamodb.endpoint,
    sqsEndpoint: sqs.endpoint,
    valkeyPort: valkey.port,
    assemblyCache,
    stop: async () => {
      await valkey.stop();
      await sqs.stop();
      await dynamodb.stop();
      rmSync(assemblyCache, { recursive: true, force: true });
    },
  };
}

/**
 * Starts the emulators once for the whole run (every test file isolates itself with its own
 * tables/queues), and makes the directory the run's shared cloud assemblies go to.
 */
export default async function setup(project: TestProject) {
  shared.oncelyEmulators ??= { started: startEmulators(), users: 0 };
  const entry = shared.oncelyEmulators;
  entry.users += 1;
  const emulators = await entry.started;
  project.provide('dynamodbEndpoint', emulators.dynamodbEndpoint);
  project.provide('sqsEndpoint', emulators.sqsEndpoint);
  project.provide('valkeyPort', emulators.valkeyPort);
  project.provide('assemblyCache', emulators.assemblyCache);
  return async () => {
    entry.users -= 1;
    if (entry.users > 0) return;
    shared.oncelyEmulators = undefined;
    await emulators.stop();
  };
}
