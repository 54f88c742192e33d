import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startTraceCollector } from '../../sandbox/trace-collector.js';
import { readTraceFile } from '../../sandbox/trace-file.js';

// docs/local.md, "Traces": the sandbox's OTLP/HTTP JSON receiver keeps each export as one line of
// its file, and the reader gives its spans back flattened.

const directory = mkdtempSync(join(tmpdir(), 'oncely-collector-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** An export of one span, as the functions' trace layer writes it. */
function exportOf(name: string, extra: Record<string, unknown> = {}) {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'consumer-fn' } }] },
        scopeSpans: [
          {
            scope: { name: 'oncely' },
            spans: [
              {
                traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
                spanId: '00f067aa0ba902b7',
                name,
                kind: 5,
                startTimeUnixNano: '1795978475999000000',
                endTimeUnixNano: '1795978476001000000',
                attributes: [
                  { key: 'oncely.outcome', value: { stringValue: 'applied' } },
                  { key: 'oncely.attempt', value: { intValue: '2' } },
                  { key: 'oncely.message.keys', value: { arrayValue: { values: [{ stringValue: 'k1' }] } } },
                ],
                links: [{ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), attributes: [] }],
                status: { code: 2, message: 'refused' },
                ...extra,
              },
            ],
          },
        ],
      },
    ],
  };
}

const post = (endpoint: string, body: string, contentType = 'application/json') =>
  fetch(endpoint, { method: 'POST', headers: { 'content-type': contentType }, body });

describe('the trace collector', () => {
  it('keeps each export whole on a line of its file, emptied at start, and gives the spans back', async () => {
    const file = join(directory, 'nested', 'traces.jsonl');
    const collector = await startTraceCollector(file);
    try {
      // Twenty at once: none may interleave with another within a line.
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          post(collector.endpoint, JSON.stringify(exportOf(`process q ${index}`))),
        ),
      );
      expect(answers.map(({ status }) => status)).toEqual(answers.map(() => 200));
      await collector.flushed();
      expect(readFileSync(file, 'utf8').split('\n').filter(Boolean)).toHaveLength(20);
      const spans = await readTraceFile(file);
      expect(new Set(spans.map(({ name }) => name)).size).toBe(20);
      expect(spans[0]).toMatchObject({
        traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        kind: 'consumer',
        service: 'consumer-fn',
        startMs: 1795978475999,
        endMs: 1795978476001,
        attributes: { 'oncely.outcome': 'applied', 'oncely.attempt': 2, 'oncely.message.keys': ['k1'] },
        links: [{ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) }],
        status: { code: 'error', message: 'refused' },
      });
    } finally {
      await collector.stop();
    }
    // A new sandbox's collector starts its file afresh.
    writeFileSync(file, 'left over\n');
    const next = await startTraceCollector(file);
    await next.stop();
    expect(readFileSync(file, 'utf8')).toBe('');
  });

  it('refuses protobuf, other paths and what is not an export, and writes none of them', async () => {
    const file = join(directory, 'refused.jsonl');
    const collector = await startTraceCollector(file);
    try {
      expect((await post(collector.endpoint, 'binary', 'application/x-protobuf')).status).toBe(415);
      expect((await post(collector.endpoint.replace('/v1/traces', '/v1/logs'), '{}')).status).toBe(404);
      expect((await post(collector.endpoint, 'not json')).status).toBe(400);
      expect((await post(collector.endpoint, '{"spans":[]}')).status).toBe(400);
      await collector.flushed();
      expect(readFileSync(file, 'utf8')).toBe('');
    } finally {
      await collector.stop();
    }
  });
});
