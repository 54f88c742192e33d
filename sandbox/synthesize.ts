import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import { SANDBOX_CONTEXT } from '../lib/constructs/sandbox-context.js';
import type { CloudFormationTemplate } from './cloudformation.js';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from './local-aws-config.js';
import { trackProcessGroup } from './process-group.js';

export interface SynthOptions {
  /** The CDK app's directory: where its cdk.json is. */
  appDirectory: string;
  /** Context over cdk.json's and cdk.context.json's, as `cdk synth --context KEY=VALUE` gives it. */
  context?: Record<string, unknown>;
}

/** A stack of the cloud assembly. */
export interface AssemblyStack {
  stackName: string;
  template: CloudFormationTemplate;
  /** The directory its template's asset paths (`aws:asset:path` metadata) are relative to. */
  assemblyDirectory: string;
}

export interface CloudAssembly {
  /** A temporary directory: the assembly `cdk deploy` would deploy, bundled assets included. */
  readonly directory: string;
  /** Its stacks (the top-level ones, as `cdk deploy --all` deploys them), each after those it depends on. */
  readonly stacks: AssemblyStack[];
  /** Deletes the directory. */
  remove(): void;
}

/** The directory holds no CDK app the sandbox can run: no cdk.json, or one without an `app` command. */
export class CdkAppConfigError extends OncelyError {
  static override readonly errorName: string = 'CdkAppConfigError';
  readonly retryable = false;
}

/** The app's command failed, or produced no stack; the message carries what it wrote to stderr. */
export class CdkSynthError extends OncelyError {
  static override readonly errorName: string = 'CdkSynthError';
  readonly retryable = false;
}

interface ManifestArtifact {
  type: string;
  properties?: { templateFile?: string; stackName?: string };
  dependencies?: string[];
}

/**
 * Synthesises the CDK app in `appDirectory` as the CDK CLI does: runs cdk.json's `app` command there
 * with the cloud assembly's directory and the merged context in its environment, bundling on (so
 * each function's asset is the code `cdk deploy` uploads), for the sandbox's account and region.
 * The caller removes the assembly when done with it.
 */
export async function synthesizeApp(options: SynthOptions): Promise<CloudAssembly> {
  const appDirectory = resolve(options.appDirectory);
  const config = readJson(join(appDirectory, 'cdk.json'), CdkAppConfigError);
  if (config === undefined) {
    throw new CdkAppConfigError(
      `${appDirectory} has no cdk.json: run \`oncely local\` in your CDK app's directory, or give it with --app-dir.`,
    );
  }
  const app = config.app;
  if (typeof app !== 'string' || app.trim() === '') {
    throw new CdkAppConfigError(`${join(appDirectory, 'cdk.json')} has no "app" command to synthesise with.`);
  }
  // The CLI's precedence: the command line over cdk.json over cdk.context.json (cached lookups).
  const context = {
    ...readJson(join(appDirectory, 'cdk.context.json'), CdkAppConfigError),
    ...(config.context as Record<string, unknown> | undefined),
    ...options.context,
    [SANDBOX_CONTEXT]: 'true',
    // Asset metadata names each function's bundled code in the template.
    'aws:cdk:enable-asset-metadata': true,
    'aws:cdk:enable-path-metadata': true,
  };
  const directory = mkdtempSync(join(tmpdir(), 'oncely-assembly-'));
  const remove = () => rmSync(directory, { recursive: true, force: true });
  try {
    await runApp(app, appDirectory, {
      CDK_OUTDIR: directory,
      CDK_CONTEXT_JSON: JSON.stringify(context),
      CDK_DEFAULT_REGION: LOCAL_REGION,
      CDK_DEFAULT_ACCOUNT: LOCAL_ACCOUNT_ID,
    });
    const stacks = readStacks(directory);
    if (stacks.length === 0) {
      throw new CdkSynthError(`\`${app}\` in ${appDirectory} synthesised no stack: there is nothing to run.`);
    }
    return { directory, stacks, remove };
  } catch (error) {
    remove();
    throw error;
  }
}

/**
 * A cloud assembly {@link synthesizeApp} wrote before, read as it is: its stacks, in order. The
 * caller keeps the directory (its `remove()` leaves it), so that several sandboxes can run one.
 */
export function readCloudAssembly(directory: string): CloudAssembly {
  const resolved = resolve(directory);
  if (!existsSync(join(resolved, 'manifest.json'))) {
    throw new CdkAppConfigError(`${resolved} is not a cloud assembly: it has no manifest.json.`);
  }
  const stacks = readStacks(resolved);
  if (stacks.length === 0)
    throw new CdkAppConfigError(`The cloud assembly in ${resolved} has no stack to run.`);
  return { directory: resolved, stacks, remove: () => undefined };
}

/** Runs the app's command through a shell, as the CLI does, in its own process group (stopped with it). */
async function runApp(command: string, cwd: string, env: Record<string, string>): Promise<void> {
  const child = spawn(command, {
    cwd,
    env: { ...process.env, ...env },
    shell: true,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const group = trackProcessGroup(child);
  let stderr = '';
  child.stdout?.resume();
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  // Whatever the app left running (a bundler's service process) goes with it.
  await group.stop();
  if (code !== 0) {
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    throw new CdkSynthError(
      `The CDK app failed to synthesise: \`${command}\` in ${cwd} ${how}.\n${stderr.trim()}`,
    );
  }
}

/** The assembly's top-level stacks from its manifest, each after the stacks it depends on. */
function readStacks(directory: string): AssemblyStack[] {
  const manifest = readJson(join(directory, 'manifest.json'), CdkSynthError) as
    | { artifacts?: Record<string, ManifestArtifact> }
    | undefined;
  const artifacts = manifest?.artifacts ?? {};
  const ordered: AssemblyStack[] = [];
  const visited = new Set<string>();
  const visit = (id: string) => {
    const artifact = artifacts[id];
    if (visited.has(id) || artifact?.type !== 'aws:cloudformation:stack') return;
    visited.add(id);
    for (const dependency of artifact.dependencies ?? []) visit(dependency);
    const templateFile = String(artifact.properties?.templateFile);
    ordered.push({
      stackName: artifact.properties?.stackName ?? id,
      template: readJson(join(directory, templateFile), CdkSynthError) as unknown as CloudFormationTemplate,
      assemblyDirectory: directory,
    });
  };
  for (const id of Object.keys(artifacts)) visit(id);
  return ordered;
}

/** The file's JSON, or undefined if there is no such file; invalid JSON is an `invalid` error. */
function readJson(
  file: string,
  invalid: new (message: string) => Error,
): Record<string, unknown> | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new invalid(`${file} is not valid JSON: ${(error as Error).message}`);
  }
}
