import { afterEach, describe, expect, it, vi } from 'vitest';
import { handler } from '../../lambdas/publisher/handler.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { createTable, localDynamoClient } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { lambdaContext } from '../support/lambda-context.js';
import { createFifoQueue, drainQueue, localSqsClient } from '../support/sqs.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

const request = {
  messages: [{ type: 'OrderPlaced', groupId: 'customer-1', key: 'order-1', payload: { cents: 100 } }],
};

describe('the deployed publisher handler', () => {
  it('is importable without its environment, and names what is missing when invoked', async () => {
    vi.stubEnv('QUEUE_URL', '');
    vi.stubEnv('IDEMPOTENCY_TABLE_NAME', '');
    await expect(handler(request, lambdaContext())).rejects.toMatchObject({
      name: 'OncelyConfigurationError',
      sources: ['QUEUE_URL', 'IDEMPOTENCY_TABLE_NAME'],
      message: expect.stringContaining('QUEUE_URL is empty; IDEMPOTENCY_TABLE_NAME is empty'),
    });
  });

  it('configures itself from PUBLISHER_ENVIRONMENT and the AWS SDK environment', async () => {
    const sqs = localSqsClient(1);
    const dynamodb = localDynamoClient();
    const { url: queueUrl } = await createFifoQueue(sqs);
    const table = await createTable(dynamodb, 'deployed');
    vi.stubEnv('QUEUE_URL', queueUrl);
    vi.stubEnv('IDEMPOTENCY_TABLE_NAME', table);
    vi.stubEnv('AWS_ENDPOINT_URL_SQS', emulatorEndpoint('sqsEndpoint'));
    vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', emulatorEndpoint('dynamodbEndpoint'));
    vi.stubEnv('AWS_REGION', LOCAL_REGION);
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');

    const { results } = await handler({ requestId: 'deployed-1', ...request }, lambdaContext());
    expect(results).toMatchObject([{ key: 'order-1', status: 'sent' }]);
    expect((await drainQueue(sqs, queueUrl, 1)).map((message) => message.envelope.key)).toEqual(['order-1']);
    sqs.destroy();
    dynamodb.destroy();
  });
});
