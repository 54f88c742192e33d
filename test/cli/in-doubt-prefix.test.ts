import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OperationsCommand, parseCommandLine } from '../../cli/command-line.js';
import type { UnresolvedPage } from '../../cli/in-doubt-records.js';
import { runOperation } from '../../cli/operations-command.js';
import { MissingStackOutputsError, PIPELINE_OUTPUTS } from '../../lib/constructs/pipeline-outputs.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { createFifoQueue } from '../support/sqs.js';
import { inDoubtPipeline, park } from './in-doubt-support.js';

// Item 10 of issue 31: one target with two pipelines (outputPrefix '' and 'Billing'). Every command
// that reads a pipeline's outputs picks one with --output-prefix; without it, the unprefixed one.

let first: Awaited<ReturnType<typeof inDoubtPipeline>>;
let second: Awaited<ReturnType<typeof inDoubtPipeline>>;
let directory: string;
let readyFile: string;
let secondDlqUrl: string;

/** The outputs of a pipeline with `prefix`, as the construct names them. */
function outputsOf(prefix: string, resources: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(PIPELINE_OUTPUTS).map(([key, output]) => [
      `${prefix}${output}`,
      resources[key] ?? `unused-${key}`,
    ]),
  );
}

beforeAll(async () => {
  first = await inDoubtPipeline();
  second = await inDoubtPipeline();
  secondDlqUrl = (await createFifoQueue(second.sqs)).url;
  directory = mkdtempSync(join(tmpdir(), 'oncely-prefix-'));
  readyFile = join(directory, 'ready.json');
  const firstOutputs = outputsOf('', first.resources);
  writeFileSync(
    readyFile,
    JSON.stringify({
      region: LOCAL_REGION,
      endpoints: { sqs: emulatorEndpoint('sqsEndpoint'), dynamodb: emulatorEndpoint('dynamodbEndpoint') },
      // What `oncely local` writes: the unprefixed pipeline's resources, and every output.
      resources: Object.fromEntries(
        Object.keys(PIPELINE_OUTPUTS).map((key) => [
          key,
          firstOutputs[(PIPELINE_OUTPUTS as Record<string, string>)[key] as string],
        ]),
      ),
      outputs: { ...firstOutputs, ...outputsOf('Billing', { ...second.resources, dlqUrl: secondDlqUrl }) },
    }),
  );
});
afterAll(() => {
  first?.close();
  second?.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

async function oncely(...args: string[]): Promise<string> {
  const command = parseCommandLine([...args, '--ready-file', readyFile], {}) as OperationsCommand;
  const printed: string[] = [];
  expect(await runOperation(command, { print: (text) => printed.push(text) })).toBe(0);
  return printed.join('\n');
}

describe('--output-prefix picks one of the target’s pipelines', () => {
  it('for in-doubt list and resolve, and dlq list', async () => {
    const inFirst = await park(first, 'first');
    const inSecond = await park(second, 'second');

    const ids = async (...args: string[]) =>
      (JSON.parse(await oncely('in-doubt', 'list', '--json', ...args)) as UnresolvedPage).records.map(
        (record) => record.id,
      );
    expect(await ids()).toEqual([inFirst]);
    expect(await ids('--output-prefix', 'Billing')).toEqual([inSecond]);

    expect(
      await oncely(
        'in-doubt',
        'resolve',
        inSecond,
        '--as',
        'completed',
        '--yes',
        '--output-prefix',
        'Billing',
      ),
    ).toBe(`${inSecond} is now COMPLETED: it is never run again.`);
    expect(await ids('--output-prefix', 'Billing')).toEqual([]);
    expect(await oncely('dlq', 'list', '--output-prefix', 'Billing')).toBe(
      `The DLQ is empty (${secondDlqUrl}).`,
    );
  });

  it('names the prefixes there are when the one given has no pipeline', async () => {
    const command = parseCommandLine(
      ['in-doubt', 'list', '--output-prefix', 'Shipping', '--ready-file', readyFile],
      {},
    );
    const listing = runOperation(command as OperationsCommand, { print: () => {} });
    await expect(listing).rejects.toThrow(MissingStackOutputsError);
    await expect(listing).rejects.toThrow(
      /has no output ShippingPublisherFunctionName, .*ShippingQueueUrl.*Its pipelines' output prefixes: '' \(no prefix\), Billing\./s,
    );
  });
});
