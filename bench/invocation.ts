import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { lambdaContext } from '../sandbox/lambda-context.js';
import { localFunctionArn } from '../sandbox/local-aws-config.js';

/** The Lambda context of one invocation with `timeoutMs` (30 s) to go: the libraries size their leases from it. */
export function invocationContext(timeoutMs = 30_000): Context {
  return lambdaContext({
    functionName: 'bench',
    functionArn: localFunctionArn('bench'),
    awsRequestId: randomUUID(),
    deadline: Date.now() + timeoutMs,
  });
}

/**
 * Powertools Logger and Metrics as the consumers use them, printing nothing: the benchmark's output is
 * its report. Metrics print unless POWERTOOLS_METRICS_DISABLED is set when they are made (run.ts sets it);
 * their warnings (a batch that stored no metric) go to the silent logger.
 */
export function silentTelemetry(): { logger: Logger; metrics: Metrics } {
  const logger = new Logger({ serviceName: 'bench', logLevel: 'SILENT' });
  return { logger, metrics: new Metrics({ namespace: 'OncelyBench', serviceName: 'bench', logger }) };
}
