import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { startDynamoDbLocal } from '../../sandbox/dynamodb-local.js';
import { assertJavaAvailable, JavaRuntimeMissingError, parseJavaMajor } from '../../sandbox/java.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { isLoopback, listeningSocketsOf } from '../support/listening-sockets.js';
import { groupAlive } from '../support/process-group.js';

describe('DynamoDB Local fixture', () => {
  it('answers on loopback and leaves no process of its group behind when stopped', async () => {
    const dynamodb = await startDynamoDbLocal();
    const client = new DynamoDBClient(localAwsConfig(dynamodb.endpoint));
    try {
      expect(dynamodb.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(await client.send(new ListTablesCommand({}))).toMatchObject({ TableNames: [] });
      expect(groupAlive(dynamodb.pid)).toBe(true);
    } finally {
      client.destroy();
      await dynamodb.stop();
    }
    expect(groupAlive(dynamodb.pid)).toBe(false);
  });

  // Issue 40, item 19: DynamoDB Local, which has no option for its address, listened on every
  // interface (`*:PORT`): a developer's tables answered anyone on their network.
  it('listens on loopback only', async () => {
    const dynamodb = await startDynamoDbLocal();
    try {
      const sockets = listeningSocketsOf(dynamodb.pid);
      expect(sockets.map((socket) => socket.port)).toContain(dynamodb.port);
      expect(sockets.filter((socket) => !isLoopback(socket.address))).toEqual([]);
    } finally {
      await dynamodb.stop();
    }
  });
});

describe('Java detection', () => {
  it('reads the major version of old and new version strings', () => {
    expect(parseJavaMajor('openjdk version "17.0.15" 2025-04-15')).toBe(17);
    expect(parseJavaMajor('java version "1.8.0_392"')).toBe(8);
    expect(parseJavaMajor('openjdk version "21" 2023-09-19')).toBe(21);
    expect(parseJavaMajor('nonsense')).toBeUndefined();
  });

  it('names what to install when java is missing', () => {
    expect(() => assertJavaAvailable('/nonexistent/java')).toThrow(JavaRuntimeMissingError);
    expect(() => assertJavaAvailable('/nonexistent/java')).toThrow(
      /Java 17 or newer.*openjdk-17-jre-headless/,
    );
  });

  it('accepts the Java on this machine', () => {
    expect(() => assertJavaAvailable()).not.toThrow();
  });
});
