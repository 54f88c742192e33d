import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../sandbox/dynamodb-local';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

/** Starts the emulators once for the whole run; every test file isolates itself with its own tables/queues. */
export default async function setup(project: TestProject) {
  const dynamodb = await startDynamoDbLocal();
  project.provide('dynamodbEndpoint', dynamodb.endpoint);
  return async () => {
    await dynamodb.stop();
  };
}
