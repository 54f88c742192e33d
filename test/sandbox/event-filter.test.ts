import { describe, expect, it } from 'vitest';
import { compileFilters, UnsupportedFilterPatternError } from '../../sandbox/event-filter.js';

// Lambda's event filtering, on records shaped as a DynamoDB-stream function receives them.

const record = {
  eventName: 'MODIFY',
  dynamodb: {
    ApproximateCreationDateTime: 1_700_000_000,
    Keys: { id: { S: 'order#42' } },
    NewImage: { id: { S: 'order#42' }, status: { S: 'PAID' }, tags: { SS: ['gift', 'eu'] }, note: { S: '' } },
    SizeBytes: 58,
  },
};

const passes = (...patterns: unknown[]) =>
  compileFilters(patterns.map((pattern) => JSON.stringify(pattern)))(record);

describe('event filter patterns', () => {
  it('passes every record without patterns', () => {
    expect(compileFilters([])(record)).toBe(true);
  });

  it.each([
    [{ eventName: ['MODIFY'] }, true],
    [{ eventName: ['INSERT', 'MODIFY'] }, true],
    [{ eventName: ['INSERT'] }, false],
    [{ dynamodb: { NewImage: { status: { S: ['PAID'] } } } }, true],
    [{ dynamodb: { NewImage: { status: { S: ['PAID'] } } }, eventName: ['REMOVE'] }, false],
    [{ dynamodb: { NewImage: { note: { S: [''] } } } }, true],
    [{ dynamodb: { NewImage: { missing: { S: [null] } } } }, false],
    [{ dynamodb: { Keys: { id: { S: [{ prefix: 'order#' }] } } } }, true],
    [{ dynamodb: { Keys: { id: { S: [{ prefix: 'user#' }] } } } }, false],
    [{ dynamodb: { NewImage: { status: { S: [{ 'anything-but': ['PENDING', 'FAILED'] }] } } } }, true],
    [{ dynamodb: { NewImage: { status: { S: [{ 'anything-but': 'PAID' }] } } } }, false],
    [{ dynamodb: { NewImage: { missing: { S: [{ 'anything-but': 'PAID' }] } } } }, false],
    [{ dynamodb: { NewImage: { status: { S: [{ exists: true }] } } } }, true],
    [{ dynamodb: { NewImage: { missing: { S: [{ exists: true }] } } } }, false],
    [{ dynamodb: { NewImage: { missing: { S: [{ exists: false }] } } } }, true],
    // exists looks at leaves: an attribute's map of types is not one.
    [{ dynamodb: { NewImage: { status: [{ exists: true }] } } }, false],
    [{ dynamodb: { NewImage: { tags: { SS: ['eu'] } } } }, true],
    [{ dynamodb: { NewImage: { tags: { SS: [{ prefix: 'gi' }] } } } }, true],
    [{ dynamodb: { SizeBytes: [{ numeric: ['>', 50, '<=', 58] }] } }, true],
    [{ dynamodb: { SizeBytes: [{ numeric: ['<', 58] }] } }, false],
    // DynamoDB numbers are strings in the record: numeric matching does not see them.
    [{ dynamodb: { Keys: { id: { S: [{ numeric: ['>', 0] }] } } } }, false],
  ])('%j → %s', (pattern, expected) => {
    expect(passes(pattern)).toBe(expected);
  });

  it('passes a record that matches any one of the patterns', () => {
    expect(passes({ eventName: ['INSERT'] }, { eventName: ['MODIFY'] })).toBe(true);
    expect(passes({ eventName: ['INSERT'] }, { eventName: ['REMOVE'] })).toBe(false);
  });

  it.each([
    ['not JSON', '{eventName'],
    ['not an object', '["INSERT"]'],
    ['a rule that is neither an array nor an object', '{"eventName":"INSERT"}'],
    ['an operator it does not emulate', '{"eventName":[{"suffix":"ERT"}]}'],
    ['a numeric rule of the wrong shape', '{"dynamodb":{"SizeBytes":[{"numeric":[">"]}]}}'],
  ])('refuses %s', (_what, pattern) => {
    expect(() => compileFilters([pattern])).toThrow(UnsupportedFilterPatternError);
  });
});
