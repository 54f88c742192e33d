import { describe, expect, it } from 'vitest';
import {
  MissingStackOutputsError,
  PIPELINE_OUTPUTS,
  resourcesFromOutputs,
} from '../../lib/constructs/pipeline-outputs.js';

describe('reading a deployed stack’s outputs', () => {
  const complete = Object.values(PIPELINE_OUTPUTS).map((key) => ({
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
    expect(Object.keys(resources).sort()).toEqual(Object.keys(PIPELINE_OUTPUTS).sort());
  });

  it('names every missing output', () => {
    const partial = complete.filter((o) => o.OutputKey !== 'DlqUrl' && o.OutputKey !== 'QueueArn');
    expect(() => resourcesFromOutputs('Oncely-dev', partial)).toThrow(MissingStackOutputsError);
    expect(() => resourcesFromOutputs('Oncely-dev', partial)).toThrow(
      'Stack Oncely-dev has no output QueueArn, DlqUrl.',
    );
  });

  it('reads the outputs of the pipeline with a given prefix', () => {
    const prefixed = complete.map((o) => ({ ...o, OutputKey: `Orders${o.OutputKey}` }));
    expect(resourcesFromOutputs('Shop', prefixed, 'Orders').dlqUrl).toBe('value-of-DlqUrl');
    expect(() => resourcesFromOutputs('Shop', prefixed)).toThrow(MissingStackOutputsError);
  });
});
