import { readFile } from 'node:fs/promises';
import { PIPELINE_OUTPUTS, type PipelineResources } from '../lib/constructs/pipeline-outputs.js';
import { ReadyFileError } from './operations-errors.js';

/** What the operations commands read of the ready file `oncely local` writes (cli/local-command.ts). */
export interface ReadyFile {
  readonly region: string;
  /**
   * `lambda`: the sandbox's Lambda Invoke endpoint, which the console publishes through; `edge`: the
   * one endpoint in front of all, whose CloudWatch the console reads its figures from.
   */
  readonly endpoints: {
    readonly sqs: string;
    readonly dynamodb: string;
    readonly lambda?: string;
    readonly edge?: string;
  };
  readonly outputs?: Readonly<Record<string, string>>;
  /** Where the sandbox's collector writes the functions' spans; absent when it collects none. */
  readonly traces?: { readonly endpoint: string; readonly file: string };
  /** Where `oncely local` keeps the functions' output, one JSON line each. */
  readonly logs?: { readonly file: string };
  /**
   * The app's serverless caches, each a local redis-server (`leaseRecords: 'valkey'`): its name and
   * the certificate its TLS presents. Absent when the app has none.
   */
  readonly caches?: readonly {
    readonly name: string;
    readonly endpoint: string;
    readonly caCertificateFile: string;
  }[];
}

/** A ready file whose sandbox runs a pipeline: its resources, by output key. */
export interface PipelineReadyFile extends ReadyFile {
  readonly resources: PipelineResources;
}

/** Which part beside the endpoints a command needs: the pipeline's resources, or every output. */
export type ReadyFileNeeds = 'resources' | 'outputs';

/**
 * Reads and checks a ready file, or throws a `ReadyFileError` saying what to do: start the sandbox,
 * or restart it to write a ready file of this version.
 */
export async function readReadyFile(readyFile: string, needs: 'resources'): Promise<PipelineReadyFile>;
export async function readReadyFile(readyFile: string, needs: 'outputs'): Promise<ReadyFile>;
export async function readReadyFile(readyFile: string, needs: ReadyFileNeeds): Promise<ReadyFile> {
  let text: string;
  try {
    text = await readFile(readyFile, 'utf8');
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    throw new ReadyFileError(
      `Cannot read the ready file ${readyFile} (${code ?? String(cause)}): is \`oncely local --ready-file ${readyFile}\` running?`,
      { cause },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new ReadyFileError(`${readyFile} is not JSON, so it is not the ready file of \`oncely local\`.`, {
      cause,
    });
  }
  const problems = readyFileProblems(json, needs);
  if (problems.length > 0) {
    throw new ReadyFileError(
      `${readyFile} is not a ready file of \`oncely local\` from this version (${problems.join('; ')}). ` +
        'Restart the sandbox with `oncely local --ready-file PATH` to write a current one.',
    );
  }
  return json as ReadyFile;
}

/** Every field of `json` that is not as a ready file has it, as `path: what it should be`. */
export function readyFileProblems(json: unknown, needs: ReadyFileNeeds): string[] {
  const file = asRecord(json);
  if (!file) return ['(the file): expected an object'];
  const problems: string[] = [];
  if (!isNonEmptyString(file.region)) problems.push('region: expected a non-empty string');
  const endpoints = asRecord(file.endpoints);
  for (const service of ['sqs', 'dynamodb']) {
    const endpoint = endpoints?.[service];
    if (typeof endpoint !== 'string' || !URL.canParse(endpoint))
      problems.push(`endpoints.${service}: expected a URL`);
  }
  const part = asRecord(file[needs]);
  if (!part) return [...problems, `${needs}: expected an object`];
  const keys = needs === 'resources' ? Object.keys(PIPELINE_OUTPUTS) : Object.keys(part);
  for (const key of keys) {
    const value = part[key];
    if (needs === 'resources' ? !isNonEmptyString(value) : typeof value !== 'string') {
      problems.push(`${needs}.${key}: expected a${needs === 'resources' ? ' non-empty' : ''} string`);
    }
  }
  return problems;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}
