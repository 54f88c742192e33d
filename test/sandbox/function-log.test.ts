import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { functionLog, linesAbout, messageTypesOf } from '../../sandbox/function-log.js';

// `oncely local`'s function log (docs/local.md): every line printed and kept; a key's lines found
// by its `messageKey`, as the consumer logs it.

const directory = mkdtempSync(join(tmpdir(), 'oncely-function-log-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('the function log', () => {
  it('prints each line and keeps it with its function; finds the lines about a key', async () => {
    const file = join(directory, 'nested', 'functions.log.jsonl');
    const printed: string[] = [];
    const log = functionLog(file, (line) => printed.push(line));
    const about = (key: string, message: string) =>
      JSON.stringify({ level: 'WARN', message, messageKey: key, timestamp: '2026-11-29T10:00:00.000Z' });
    log.output(about('order-7', 'sent to the DLQ'), 'consumer');
    log.output(about('order-70', 'another key'), 'consumer');
    log.output('START RequestId: 1 a plain line naming order-7', 'publisher');
    log.output(JSON.stringify({ message: 'no key' }), 'consumer');
    await log.close();
    expect(printed).toHaveLength(4);
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(4);
    const lines = await linesAbout(file, 'order-7');
    expect(lines.map(({ function: name, entry }) => [name, entry.message])).toEqual([
      ['consumer', 'sent to the DLQ'],
    ]);
    expect(lines[0]?.at).toEqual(expect.any(Number));
  });

  it('starts empty, and a missing file holds no line', async () => {
    const file = join(directory, 'again.jsonl');
    const first = functionLog(file, () => undefined);
    first.output(JSON.stringify({ messageKey: 'k' }), 'f');
    await first.close();
    await functionLog(file, () => undefined).close();
    expect(readFileSync(file, 'utf8')).toBe('');
    expect(await linesAbout(join(directory, 'none.jsonl'), 'k')).toEqual([]);
  });

  it('tells the types a function said it handles, by its latest line that lists them', async () => {
    const file = join(directory, 'types.jsonl');
    const log = functionLog(file, () => undefined);
    expect(await messageTypesOf(file, 'consumer')).toEqual([]);
    const ready = (types: string[]) =>
      JSON.stringify({ level: 'INFO', message: 'ready', messageTypes: types });
    log.output(ready(['OrderPlaced']), 'consumer');
    log.output(ready(['Other']), 'another-consumer');
    log.output('a plain line naming messageTypes', 'consumer');
    log.output(ready(['OrderPlaced', 'StockReceived']), 'consumer');
    await log.close();
    expect(await messageTypesOf(file, 'consumer')).toEqual(['OrderPlaced', 'StockReceived']);
    expect(await messageTypesOf(file, 'publisher')).toEqual([]);
  });
});
