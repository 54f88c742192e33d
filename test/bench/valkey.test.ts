import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BenchEndpoints } from '../../bench/clients.js';
import { spliceSection, VALKEY_HEADING, valkeySection } from '../../bench/valkey-report.js';
import {
  DESIGN_REQUESTS_PER_MESSAGE,
  measureValkeyAgainstDynamoDb,
  type ValkeyComparison,
  type ValkeyComparisonOptions,
} from '../../bench/valkey-vs-dynamodb.js';
import { describeMachine } from '../../harness/machine.js';
import { startValkey, type ValkeyServer } from '../../harness/valkey-server.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

// Section 9 of `npm run bench` in miniature: the Valkey store against the DynamoDB store, both on the
// real consumer. Only what a busy machine cannot move is checked: the requests each store gets per
// message (design §3 and §3.1), the server's own count of them, and that the section renders.
// Timings are the benchmark's to report, never asserted here.
describe('the Valkey benchmark, in miniature', () => {
  let endpoints: BenchEndpoints;
  let valkey: ValkeyServer;
  let comparison: ValkeyComparison;
  const options: Omit<ValkeyComparisonOptions, 'onProgress'> = {
    sameLatenciesMs: [0, 1],
    typicalLatencyMs: { valkey: 1, dynamodb: 2 },
    batches: 2,
    warmupBatches: 1,
    cpu: { rounds: 1, batchesPerRound: 1, warmupBatches: 0 },
  };

  beforeAll(async () => {
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
    endpoints = { dynamodb: emulatorEndpoint('dynamodbEndpoint'), sqs: emulatorEndpoint('sqsEndpoint') };
    valkey = await startValkey();
    comparison = await measureValkeyAgainstDynamoDb(endpoints, valkey, options);
  }, 120_000);
  afterAll(async () => {
    await valkey?.stop();
  });

  it('sends each store one request per step: the acquire and the completion, one script each in Valkey', () => {
    for (const row of comparison.rows) {
      expect(row.requestsPerMessage).toBe(DESIGN_REQUESTS_PER_MESSAGE);
      // After the untimed round every script is in the server's cache: EVALSHA alone.
      expect(row.operationsPerMessage).toEqual(
        row.store === 'valkey' ? { EVALSHA: 2 } : { PutItem: 1, UpdateItem: 1 },
      );
    }
    // The server ran as many scripts as the clients sent: none was retried or lost on the way.
    expect(comparison.serverScripts.server).toBe(comparison.serverScripts.client);
    // Valkey's 2 consumers × its 2 latencies (0 and 1 ms, its typical one) × 2 timed rounds × 10 records × 2.
    expect(comparison.serverScripts.client).toBe(2 * 2 * 2 * 10 * 2);
  });

  it('bills DynamoDB one write unit per request: records under 1 KB, no read', () => {
    for (const row of comparison.rows.filter((r) => r.store === 'dynamodb')) {
      expect(row.writeUnitsPerMessage).toBe(2);
      expect(row.operationsPerMessage.GetItem).toBeUndefined();
    }
  });

  it('measures what the cost needs: record sizes, script bytes, server time, a point per latency', () => {
    for (const row of comparison.rows) {
      expect(row.storedBytesPerRecord).toBeGreaterThan(100);
      expect(row.points.map((point) => point.latencyMs)).toEqual(row.store === 'valkey' ? [0, 1] : [0, 1, 2]);
      expect(Number.isFinite(row.roundTrips)).toBe(true);
      if (row.store === 'valkey') {
        expect(row.bytesPerScript).toBeGreaterThan(100);
        expect(row.scriptServerCpuMicros).toBeGreaterThan(0);
      }
    }
    expect(comparison.set.serverCpuMicros).toBeGreaterThan(0);
    expect(comparison.serverVersion).toMatch(/^\d+\.\d+/);
  });

  it('renders its section, and a run of it alone replaces its last one in RESULTS.md', () => {
    const section = valkeySection({
      comparison,
      options,
      assumptions: { recordHours: 19 * 24, lambdaMemoryMiB: 512 },
      provenance: {
        command: 'npm run bench -- --only valkey',
        startedAt: new Date(),
        seconds: 1,
        machine: describeMachine(),
        loadAverageAtEnd: 0,
      },
    });
    expect(section.startsWith(`${VALKEY_HEADING}\n`)).toBe(true);
    expect(section).toContain('Break-even');
    expect(section).toContain('https://aws.amazon.com/elasticache/pricing/');
    expect(section).not.toMatch(/NaN|undefined|Infinity/);

    const results =
      '# Benchmark results\n\n## 8. Standard queues\n\neight\n\n## How to read these figures\n\n- notes\n';
    const first = spliceSection(results, section);
    expect(first).toContain(`eight\n\n${VALKEY_HEADING}\n`);
    expect(first).toContain('\n\n## How to read these figures\n\n- notes\n');
    const again = spliceSection(first, `${VALKEY_HEADING}\n\nnew figures\n`);
    expect(again).toBe(
      `# Benchmark results\n\n## 8. Standard queues\n\neight\n\n${VALKEY_HEADING}\n\nnew figures\n\n` +
        '## How to read these figures\n\n- notes\n',
    );
  });
});
