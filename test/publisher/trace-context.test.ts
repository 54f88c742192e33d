import { describe, expect, it } from 'vitest';
import {
  sanitizedTraceContext,
  sqsTraceAttributes,
  traceAttributeBytes,
  traceContextProblems,
} from '../../lambdas/common/trace-context.js';
import { PublishValidationError } from '../../lambdas/publisher/errors.js';
import { validatePublishRequest } from '../../lambdas/publisher/validation.js';

// DESIGN §6: the producer's trace context, validated by the publisher and sent as SQS attributes.

const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const tracestate = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE';
const awsTraceHeader = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
const message = { type: 'OrderPlaced', groupId: 'customer-1', key: 'order-1', payload: { cents: 100 } };
const now = new Date('2026-11-29T12:00:00Z');

describe('traceContextProblems', () => {
  it('accepts a full context, a partial one, and none', () => {
    expect(traceContextProblems({ traceparent, tracestate, awsTraceHeader })).toEqual([]);
    expect(traceContextProblems({ awsTraceHeader })).toEqual([]);
    expect(traceContextProblems(undefined)).toEqual([]);
  });

  it.each([
    ['not an object', 'abc', 'traceContext'],
    ['a traceparent of another form', { traceparent: '00-abc-def-01' }, 'traceContext.traceparent'],
    [
      'an all-zero trace id',
      { traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` },
      'traceContext.traceparent',
    ],
    ['upper-case hex', { traceparent: traceparent.toUpperCase() }, 'traceContext.traceparent'],
    ['a tracestate without its traceparent', { tracestate }, 'traceContext.tracestate'],
    [
      'a tracestate over 512 characters',
      { traceparent, tracestate: 'a=b,'.repeat(129) },
      'traceContext.tracestate',
    ],
    [
      'an X-Ray header without its Root',
      { awsTraceHeader: 'Parent=53995c3f42cd8ad8' },
      'traceContext.awsTraceHeader',
    ],
    ['a number', { traceparent: 7 }, 'traceContext.traceparent'],
    ['an unknown field', { traceParent: traceparent }, 'traceContext'],
  ])('names %s', (_, value, path) => {
    expect(traceContextProblems(value).map(([where]) => where)).toContain(path);
  });
});

describe('sanitizedTraceContext', () => {
  it('keeps the valid fields a propagator wrote, drops the rest and what it does not know', () => {
    expect(sanitizedTraceContext({ traceparent, tracestate, baggage: 'a=b' })).toEqual({
      traceparent,
      tracestate,
    });
    expect(sanitizedTraceContext({ traceparent: 'junk', tracestate, awsTraceHeader })).toEqual({
      awsTraceHeader,
    });
    expect(sanitizedTraceContext({})).toBeUndefined();
  });
});

describe('the SQS attributes of a context', () => {
  it('are message attributes for W3C and the AWSTraceHeader system attribute for X-Ray', () => {
    expect(sqsTraceAttributes({ traceparent, tracestate, awsTraceHeader })).toEqual({
      MessageAttributes: {
        traceparent: { DataType: 'String', StringValue: traceparent },
        tracestate: { DataType: 'String', StringValue: tracestate },
      },
      MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: awsTraceHeader } },
    });
    expect(sqsTraceAttributes(undefined)).toEqual({});
  });

  it('count toward the message size as SQS counts them: names, types and values; the system attribute not', () => {
    const traceparentBytes = 'traceparent'.length + 'String'.length + traceparent.length;
    expect(traceAttributeBytes({ traceparent, awsTraceHeader })).toBe(traceparentBytes);
    expect(traceAttributeBytes({ traceparent, tracestate })).toBe(
      traceparentBytes + 'tracestate'.length + 'String'.length + tracestate.length,
    );
  });
});

describe('a request with a trace context', () => {
  it('gives each message the context and counts its attributes in the message size', () => {
    const command = validatePublishRequest(
      { traceContext: { traceparent }, messages: [message] },
      { maxMessageBytes: 262_144 },
      now,
    );
    const [prepared] = command.prepared;
    expect(prepared?.trace).toEqual({ traceparent });
    expect(prepared?.bytes).toBe(
      Buffer.byteLength(prepared?.body ?? '') + traceAttributeBytes({ traceparent }),
    );
    expect(command.traceContext).toEqual({ traceparent });
  });

  it('sends a message whose body leaves no room for the context without it, never fails it', () => {
    const { prepared } = validatePublishRequest({ messages: [message] }, { maxMessageBytes: 262_144 }, now);
    const bodyBytes = prepared[0]?.bytes ?? 0;
    const command = validatePublishRequest(
      { traceContext: { traceparent, awsTraceHeader }, messages: [message] },
      { maxMessageBytes: bodyBytes },
      now,
    );
    expect(command.prepared[0]?.trace).toBeUndefined();
    expect(command.prepared[0]?.bytes).toBe(bodyBytes);
  });

  it('is refused when its context is invalid, each problem named by its path', () => {
    const refusal = (() => {
      try {
        validatePublishRequest(
          { traceContext: { traceparent: 'junk', tracestate }, messages: [message] },
          { maxMessageBytes: 262_144 },
          now,
        );
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(PublishValidationError);
    expect((refusal as PublishValidationError).problems.map((problem) => problem.path)).toEqual([
      'traceContext.traceparent',
    ]);
  });
});
