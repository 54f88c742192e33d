import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { MiddlewareStack } from '@smithy/types';
import { localAwsConfig } from '../sandbox/local-aws-config.js';

/** Where this run's DynamoDB Local and SQS emulator listen. */
export interface BenchEndpoints {
  dynamodb: string;
  sqs: string;
}

// biome-ignore lint/suspicious/noExplicitAny: any SDK v3 client, whatever its input/output types
type SdkClient = { middlewareStack: MiddlewareStack<any, any> };

/**
 * Holds every request (each attempt) a client sends for `ms` before it leaves. The emulators answer
 * on loopback within a millisecond or two; an AWS round trip takes several, and that is what
 * decides how long a batch takes when its requests run one after another. A function is read at
 * each request, so that one client can be measured at several latencies (2, the latency slope).
 */
export function addLatency<C extends SdkClient>(client: C, ms: number | (() => number)): C {
  const delay = typeof ms === 'number' ? () => ms : ms;
  if (typeof ms !== 'number' || ms > 0) {
    client.middlewareStack.add(
      (next) => async (args) => {
        const held = delay();
        if (held > 0) await sleep(held);
        return next(args);
      },
      { step: 'deserialize', name: 'benchLatency' },
    );
  }
  return client;
}

export function dynamoDbClient(
  endpoints: BenchEndpoints,
  latencyMs: number | (() => number) = 0,
): DynamoDBClient {
  return addLatency(new DynamoDBClient(localAwsConfig(endpoints.dynamodb)), latencyMs);
}

/** One attempt per call, as the publisher's own client: a retry would show as an extra call. */
export function sqsClient(endpoints: BenchEndpoints, latencyMs = 0): SQSClient {
  return addLatency(new SQSClient({ ...localAwsConfig(endpoints.sqs), maxAttempts: 1 }), latencyMs);
}

/** The variables a function needs to reach the emulators with the SDK's defaults, as the sandbox sets them. */
export function awsEnvironment(endpoints: BenchEndpoints): Record<string, string> {
  const { region, credentials } = localAwsConfig(endpoints.dynamodb);
  return {
    AWS_REGION: region,
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}
