import { rmSync, writeFileSync } from 'node:fs';
import { type SandboxDescription, startSandbox } from '../sandbox/local-sandbox.js';

export interface LocalOptions {
  environment: Record<string, string>;
  context: Record<string, string>;
  readyFile?: string;
}

/** `oncely local`: runs the sandbox until SIGINT or SIGTERM, then stops everything it started. */
export async function runLocal(options: LocalOptions): Promise<number> {
  console.log('Starting the Oncely sandbox (DynamoDB Local, SQS emulator, functions)…');
  const sandbox = await startSandbox({
    environment: options.environment,
    context: options.context,
    onBatch: (functionName, report) => {
      if (report.functionError) {
        console.log(
          `${functionName}: batch of ${report.received} failed (${report.functionError}); it will come back`,
        );
      }
    },
  });
  const { description } = sandbox;
  printDescription(description);
  if (options.readyFile) writeFileSync(options.readyFile, `${JSON.stringify(description, null, 2)}\n`);

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  console.log(`\n${signal}: stopping the sandbox…`);
  await sandbox.stop();
  // A stale ready file would point clients at endpoints that are gone.
  if (options.readyFile) rmSync(options.readyFile, { force: true });
  return 0;
}

function printDescription(description: SandboxDescription): void {
  const { endpoints, resources } = description;
  console.log(`Ready (${description.stackName}, region ${description.region}):`);
  console.log(`  Lambda Invoke  ${endpoints.lambda}   (AWS_ENDPOINT_URL_LAMBDA)`);
  console.log(`  SQS            ${endpoints.sqs}   (AWS_ENDPOINT_URL_SQS)`);
  console.log(`  DynamoDB       ${endpoints.dynamodb}   (AWS_ENDPOINT_URL_DYNAMODB)`);
  console.log(`  publisher      ${resources.publisherFunctionName}`);
  console.log(`  consumer       ${resources.consumerFunctionName}`);
  console.log(`  queue          ${resources.queueUrl}`);
  console.log(`  DLQ            ${resources.dlqUrl}`);
  console.log(`  tables         ${resources.idempotencyTableName}, ${resources.ledgerTableName}`);
  const skipped = [...new Set(description.notEmulated.map((resource) => resource.type))].sort();
  console.log(`Not emulated (no local effect): ${skipped.join(', ')}`);
  console.log('Press Ctrl-C to stop.');
}
