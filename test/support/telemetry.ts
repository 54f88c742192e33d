import { Logger } from '@aws-lambda-powertools/logger';
import { vi } from 'vitest';
import type { MetricsSink } from '../../lambdas/consumer/index.js';

/** A Powertools logger that prints nothing, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return new Logger({ serviceName: 'consumer-test', logLevel: 'SILENT' });
}

/** Records the metrics a consumer adds, summed by name, instead of publishing them. */
export function metricsRecorder(): MetricsSink & { counts: Record<string, number> } {
  const counts: Record<string, number> = {};
  return {
    counts,
    addMetric: (name, _unit, value) => {
      counts[name] = (counts[name] ?? 0) + value;
    },
  };
}

/** Everything written to stdout while `run` runs, as parsed JSON lines, and what `run` returned. */
export async function capturingStdout<T>(
  run: () => Promise<T>,
): Promise<{ result: T; lines: Record<string, unknown>[] }> {
  const written: string[] = [];
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    written.push(String(chunk));
    return true;
  });
  try {
    const result = await run();
    const lines = written
      .join('')
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line));
    return { result, lines };
  } finally {
    stdout.mockRestore();
  }
}
