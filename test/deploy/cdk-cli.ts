import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The account and region moto answers for (STS GetCallerIdentity names this account). */
export const ACCOUNT = '123456789012';
export const REGION = 'us-east-1';

/** The environment a user would give the AWS SDK and the CDK CLI for an endpoint like moto's or LocalStack's. */
export function awsEnvironment(endpoint: string): NodeJS.ProcessEnv {
  const { AWS_PROFILE: _profile, AWS_SESSION_TOKEN: _token, ...rest } = process.env;
  return {
    ...rest,
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: REGION,
    AWS_DEFAULT_REGION: REGION,
    AWS_ACCESS_KEY_ID: 'testing',
    AWS_SECRET_ACCESS_KEY: 'testing',
    CDK_DISABLE_CLI_TELEMETRY: 'true',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

/** What one `cdk` command printed (the CLI writes its progress to stderr). */
export interface CdkRun {
  output: string;
}

/**
 * Runs the project's own CDK CLI (`npx cdk`, the version its package.json pins) in `directory`.
 * A failure carries everything the CLI printed.
 */
export async function cdk(directory: string, env: NodeJS.ProcessEnv, args: string[]): Promise<CdkRun> {
  try {
    const { stdout, stderr } = await run('npx', ['--no-install', 'cdk', ...args], {
      cwd: directory,
      env,
      maxBuffer: 1 << 26,
      timeout: 600_000,
    });
    return { output: `${stdout}\n${stderr}` };
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`cdk ${args.join(' ')} failed in ${directory}:\n${stdout}\n${stderr}`, { cause: error });
  }
}
