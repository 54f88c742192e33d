import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listUnresolved } from '../../cli/in-doubt-records.js';
import { resolveAsRetry } from '../../cli/in-doubt-retry.js';
import { describeResolution, describeUnresolved } from '../../cli/operations-report.js';
import { readItem } from '../support/dynamodb.js';
import { inDoubtPipeline, park } from './in-doubt-support.js';
import { beforeRequests, fail, once, type RequestInput } from './sdk-faults.js';

// Item 8a of issue 31: when only the last step of `--as retry` (taking the record off the list)
// failed, the list told the operator to run the retry again. What is left, and the command for it,
// must be exact.

let target: Awaited<ReturnType<typeof inDoubtPipeline>>;

beforeAll(async () => {
  target = await inDoubtPipeline();
});
afterAll(() => target?.close());

const clearMark = (input: RequestInput) =>
  String(input.UpdateExpression).startsWith('SET expiresAt = :expiresAt, history');

/** A retry target whose clearing step fails as `select` picks it. */
async function failingClear(select: (input: RequestInput) => boolean) {
  const retrying = await inDoubtPipeline();
  retrying.resources = target.resources;
  beforeRequests(retrying.dynamodb, select, fail);
  return retrying;
}

describe('the last step of --as retry', () => {
  it('is tried again when it fails once, so the record leaves the list', async () => {
    const id = await park(target, 'steps-once');
    const retrying = await failingClear(once(clearMark));

    const resolution = await resolveAsRetry(retrying, id);

    expect(resolution).not.toHaveProperty('notCleared');
    expect(await readItem(target.resources.idempotencyTableName, id)).not.toHaveProperty('unresolved');
    retrying.close();
  });

  it('failing every try, the command and the list say only it is left, and what to run', async () => {
    const id = await park(target, 'steps-always');
    const retrying = await failingClear(clearMark);

    const resolution = await resolveAsRetry(retrying, id);

    expect(resolution).toMatchObject({ notCleared: expect.stringContaining('injected') });
    expect(describeResolution(resolution, 'queue')).toContain(
      'Only the last step is left: taking the record off the list',
    );
    const [listed] = (await listUnresolved(target)).records.filter((record) => record.id === id);
    expect(listed).toMatchObject({ status: 'RETRY_PENDING' });
    const shown = describeUnresolved({ records: listed ? [listed] : [] }, 'table');
    expect(shown).not.toContain('run resolve --as retry again');
    expect(shown).toContain(`send unconfirmed: oncely in-doubt resolve ${id} --as retry`);
    expect(shown).toContain(
      'A RETRY_PENDING record is one whose --as retry did not finish: step 1 of 3 (mark) is done, step 2 (send the ' +
        'message) is not confirmed.',
    );
    retrying.close();
  });
});
