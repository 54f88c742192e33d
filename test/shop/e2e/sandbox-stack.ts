import { type Sandbox, type SandboxOptions, startSandbox } from '../../../sandbox/local-sandbox.js';

/**
 * Starts the shop's app (the repository's root) in a sandbox and points this process's environment
 * at it as at a deployed stack, with nothing else: `ONCELY_TARGET=stack`, its stack's name, its
 * edge as `AWS_ENDPOINT_URL`, and credentials, as a user would run the suite against a stack.
 */
export async function startSandboxAsStack(
  options: Pick<SandboxOptions, 'context' | 'duplicateDeliveries'> = {},
): Promise<Sandbox> {
  const sandbox = await startSandbox({ appDirectory: '.', functionOutput: () => undefined, ...options });
  const { endpoints, region, stackName } = sandbox.description;
  Object.assign(process.env, {
    ONCELY_TARGET: 'stack',
    ONCELY_STACK_NAME: stackName,
    AWS_ENDPOINT_URL: endpoints.edge,
    AWS_REGION: region,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
  });
  return sandbox;
}
