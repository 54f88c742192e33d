import { type Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { type ICommandHooks, NodejsFunction, type NodejsFunctionProps } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { LAMBDA_BUNDLING, lambdaBundling, nodejsFunctionBundling } from './bundling.js';
import { assertToolchain, TOOLCHAINS } from './missing-toolchain.js';

/** What a function Oncely builds needs besides its entry; the rest are NodejsFunction's options. */
export type OncelyFunctionOptions = Omit<NodejsFunctionProps, 'entry' | 'role' | 'logGroup'> & {
  timeout: Duration;
  memorySize: number;
  environment: Record<string, string>;
  /** For its log group. */
  removalPolicy: RemovalPolicy;
};

/**
 * A function as Oncely's constructs build them (their own, and a consumer from its entry): Node.js 24,
 * ARM64 unless told otherwise, bundled with {@link LAMBDA_BUNDLING}, with its own role and log group
 * (`<id>Role`, `<id>Logs` beside it in `scope`).
 */
export function oncelyFunction(
  scope: Construct,
  id: string,
  entry: string,
  { removalPolicy, ...options }: OncelyFunctionOptions,
): NodejsFunction {
  // Without esbuild, NodejsFunction falls back to Docker and fails far from the cause; a stack the
  // synth does not bundle (`cdk ls`, `--exclusively`) needs no bundler.
  if (Stack.of(scope).bundlingRequired && !options.bundling?.forceDockerBundling) {
    assertToolchain(`Bundling ${scope.node.path}/${id} (oncely/cdk)`, TOOLCHAINS.bundling);
  }
  // Its own role, allowed to write only its own log group (instead of AWS's managed policy,
  // which may create any log group in the account).
  const logGroup = new LogGroup(scope, `${id}Logs`, { retention: RetentionDays.ONE_MONTH, removalPolicy });
  const role = new Role(scope, `${id}Role`, { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
  logGroup.grantWrite(role);
  const bundling = lambdaBundling({
    ...options.bundling,
    commandHooks: withOncelyHooks(options.bundling?.commandHooks),
  });
  return new NodejsFunction(scope, id, {
    handler: 'handler',
    architecture: Architecture.ARM_64,
    ...options,
    entry,
    role,
    logGroup,
    runtime: Runtime.NODEJS_24_X,
    environment: withSourceMaps(options.environment, bundling.sourceMap),
    // A minified ES module for node24 with the AWS SDK inside and names kept: see bundling.ts.
    bundling: nodejsFunctionBundling(bundling),
  });
}

/** A source map is only read with `--enable-source-maps`: added to your `NODE_OPTIONS`, if any, when there is a map. */
function withSourceMaps(environment: Record<string, string>, sourceMap: boolean): Record<string, string> {
  const flag = '--enable-source-maps';
  const options = environment.NODE_OPTIONS?.trim() ?? '';
  if (!sourceMap || options.split(/\s+/).includes(flag)) return environment;
  return { ...environment, NODE_OPTIONS: options ? `${options} ${flag}` : flag };
}

/**
 * Your command hooks, if any, and then Oncely's: the asset's `package.json` (bundling.ts) is written
 * whatever hooks you add, so that the sandbox reads the bundle in the format it was built in.
 */
function withOncelyHooks(yours: ICommandHooks | undefined): ICommandHooks {
  const oncely = LAMBDA_BUNDLING.commandHooks;
  if (!yours) return oncely;
  return {
    beforeBundling: (inputDir, outputDir) => yours.beforeBundling(inputDir, outputDir),
    beforeInstall: (inputDir, outputDir) => yours.beforeInstall(inputDir, outputDir),
    afterBundling: (inputDir, outputDir) => [
      ...yours.afterBundling(inputDir, outputDir),
      ...oncely.afterBundling(inputDir, outputDir),
    ],
  };
}
