import { type Sandbox, type SandboxOptions, startSandbox } from '../../../sandbox/local-sandbox.js';
import { sharedAssembly } from '../../support/shared-assembly.js';

/**
 * Starts the shop's app (the repository's root) in a sandbox and points this process's environment
 * at it as at a deployed stack, with nothing else: `ONCELY_TARGET=stack`, its stack's name, its
 * edge as `AWS_ENDPOINT_URL`, and credentials, as a user would run the suite against a stack.
 */
export async function startSandboxAsStack(
  options: Pick<SandboxOptions, 'context' | 'duplicateDeliveries'> = {},
): Promise<Sandbox> {
  const { context, ...rest } = options;
  const sandbox = await startSandbox({
    appDirectory: '.',
    // One synthesis of each context for the whole test run.
    cloudAssembly: await sharedAssembly('.', context),
    functionOutput: () => undefined,
    ...rest,
  });
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
