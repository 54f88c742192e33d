import type { BatchLatency } from './batch-latency.js';
import type { PublisherCost } from './publisher-calls.js';
import type { RequestsPerMessage } from './requests-per-message.js';

/** Issue 7's targets, judged on the figures of the run; never on expectations. */
export interface TargetVerdict {
  target: string;
  measured: string;
  met: boolean;
  /** For a missed target: by how much. */
  shortfall?: string;
}

export function judgeTargets(figures: {
  requests: readonly RequestsPerMessage[];
  latency: readonly BatchLatency[];
  publisher: readonly PublisherCost[];
}): TargetVerdict[] {
  return [
    requestsTarget(figures.requests),
    latencyTarget(figures.latency),
    publisherTarget(figures.publisher),
  ];
}

function requestsTarget(rows: readonly RequestsPerMessage[]): TargetVerdict {
  const first = (subject: RequestsPerMessage['subject']) =>
    rows.find((row) => row.subject === subject && row.scenario === 'first')?.requests ?? Number.NaN;
  const [oncely, powertools] = [first('transactional'), first('powertools')];
  const met = oncely <= 1 && powertools >= 3;
  return {
    target:
      'Transactional mode: 1 DynamoDB request per first delivery, against ≥ 3 for Powertools plus the write',
    measured: `${oncely} against ${powertools}`,
    met,
    shortfall: met
      ? undefined
      : `${oncely > 1 ? `Oncely needed ${oncely - 1} more than 1` : ''}${powertools < 3 ? `Powertools needed only ${powertools}` : ''}`,
  };
}

const TARGET_SPEEDUP = 4;
const TARGET_GROUPS = 10;

function latencyTarget(rows: readonly BatchLatency[]): TargetVerdict {
  const median = (consumer: BatchLatency['consumer']) =>
    rows.find((row) => row.consumer === consumer && row.groups === TARGET_GROUPS)?.latency.median ??
    Number.NaN;
  const [oncely, powertools] = [median('transactional'), median('powertools')];
  const speedup = powertools / oncely;
  const met = speedup >= TARGET_SPEEDUP;
  return {
    target: `Batch latency at ${TARGET_GROUPS} groups: at least ${TARGET_SPEEDUP}× lower than Powertools' FIFO processor`,
    measured: `${speedup.toFixed(1)}× lower (median ${oncely.toFixed(1)} ms against ${powertools.toFixed(1)} ms)`,
    met,
    shortfall: met
      ? undefined
      : `${(TARGET_SPEEDUP - speedup).toFixed(1)}× short: Oncely would need a median of ${(powertools / TARGET_SPEEDUP).toFixed(1)} ms`,
  };
}

const TARGET_CALLS_PER_MESSAGE = 0.1;

function publisherTarget(rows: readonly PublisherCost[]): TargetVerdict {
  const publisher = rows.find((row) => row.sender === 'publisher');
  const perMessage = publisher ? publisher.sqsCalls / publisher.messages : Number.NaN;
  const met = perMessage <= TARGET_CALLS_PER_MESSAGE;
  return {
    target: `Publisher: ≤ ${TARGET_CALLS_PER_MESSAGE} send calls per message`,
    measured: `${perMessage.toFixed(3)} (${publisher?.sqsCalls} SendMessageBatch calls for ${publisher?.messages} messages)`,
    met,
    shortfall: met
      ? undefined
      : `${(perMessage - TARGET_CALLS_PER_MESSAGE).toFixed(3)} calls per message too many`,
  };
}
