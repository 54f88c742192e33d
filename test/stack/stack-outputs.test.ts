import { describe, expect, it } from 'vitest';
import { MissingStackOutputsError, resourcesFromOutputs, STACK_OUTPUTS } from '../../src/cdk/stack-outputs.js';

describe('reading a deployed stack’s outputs', () => {
  const complete = Object.values(STACK_OUTPUTS).map((key) => ({
    OutputKey: key,
    OutputValue: `value-of-${key}`,
  }));

  it('maps every output onto the pipeline’s resources', () => {
    const resources = resourcesFromOutputs('Oncely-dev', [
      ...complete,
      { OutputKey: 'Unrelated', OutputValue: 'x' },
    ]);
    expect(resources.queueUrl).toBe('value-of-QueueUrl');
    expect(resources.publisherFunctionName).toBe('value-of-PublisherFunctionName');
    expect(Object.keys(resources).sort()).toEqual(Object.keys(STACK_OUTPUTS).sort());
  });

  it('names every missing output', () => {
    const partial = complete.filter((o) => o.OutputKey !== 'DlqUrl' && o.OutputKey !== 'LedgerTableName');
    expect(() => resourcesFromOutputs('Oncely-dev', partial)).toThrow(MissingStackOutputsError);
    expect(() => resourcesFromOutputs('Oncely-dev', partial)).toThrow(
      'Stack Oncely-dev has no output DlqUrl, LedgerTableName.',
    );
  });
});
