import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../sandbox/dynamodb-local.js';
import { installLambdaNode } from '../../sandbox/node-binary.js';
import { startSqsEmulator } from '../../sandbox/sqs-emulator.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    sqsEndpoint: string;
  }
}

/** Starts the emulators once for the whole run; every test file isolates itself with its own tables/queues. */
export default async function setup(project: TestProject) {
  // The functions run on Lambda's Node.js major (nodejs24.x): installed once into .oncely/, from
  // the npm registry `npm ci` used. Without it the tests would judge code on another major: fail.
  installLambdaNode(24);
  const dynamodb = await startDynamoDbLocal();
  project.provide('dynamodbEndpoint', dynamodb.endpoint);
  const sqs = await startSqsEmulator().catch(async (error) => {
    await dynamodb.stop();
    throw error;
  });
  project.provide('sqsEndpoint', sqs.endpoint);
  return async () => {
    await sqs.stop();
    await dynamodb.stop();
  };
}
