import type { PublishMessage, PublishResult } from '../lambdas/client/index.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';

/** How the console's page publishes in a sandbox: through the pipeline's publisher, as a service would. */
export interface ConsolePublisher {
  publish(message: PublishMessage): Promise<PublishResult>;
  close(): void;
}

/**
 * The sandbox's publisher, invoked at its Lambda endpoint by `oncely/client`'s `publish`. The
 * Lambda client is loaded here, when a sandbox's console starts: the other commands need none.
 */
export async function sandboxPublisher(
  sandbox: { region: string; endpoints: { lambda: string } },
  functionName: string,
): Promise<ConsolePublisher> {
  const [{ LambdaClient }, { publish }] = await Promise.all([
    import('@aws-sdk/client-lambda'),
    import('../lambdas/client/index.js'),
  ]);
  const lambda = new LambdaClient({ ...localAwsConfig(sandbox.endpoints.lambda), region: sandbox.region });
  return {
    publish: (message) => publish([message], { functionName, lambda }),
    close: () => lambda.destroy(),
  };
}
