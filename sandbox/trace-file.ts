import { readFile, stat } from 'node:fs/promises';

/** An attribute value as OTLP's JSON mapping writes it. */
type AnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string | number }
  | { doubleValue: number }
  | { arrayValue: { values?: AnyValue[] } };

type KeyValues = { key: string; value: AnyValue }[];

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: KeyValues;
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
}

interface ExportRequest {
  resourceSpans: { resource?: { attributes?: KeyValues }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

/** OTLP's span kinds, by their protocol number. */
const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const;

/** One span of a trace file, flattened for reading. */
export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: (typeof KINDS)[number];
  /** The service that sent it (its resource's `service.name`): a function's name, or yours. */
  service?: string;
  /** Epoch milliseconds. */
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
  /** `error` when its status says so, with the message. */
  status: { code: 'unset' | 'ok' | 'error'; message?: string };
}

/**
 * A trace file's spans, read again only when the file grew: the console reads them every 2 s, and
 * the demo's file holds megabytes. A missing file holds none yet (it is written on the first export).
 */
export class TraceFileReader {
  #size = -1;
  #spans: CollectedSpan[] = [];

  constructor(readonly file: string) {}

  async spans(): Promise<CollectedSpan[]> {
    const size = await stat(this.file).then(
      (stats) => stats.size,
      () => 0,
    );
    if (size !== this.#size) {
      this.#spans = size === 0 ? [] : await readTraceFile(this.file);
      this.#size = size;
    }
    return this.#spans;
  }
}

/** Every span of a trace file the sandbox's collector wrote (one OTLP JSON export per line), in file order. */
export async function readTraceFile(file: string): Promise<CollectedSpan[]> {
  const lines = (await readFile(file, 'utf8')).split('\n').filter((line) => line !== '');
  return lines.flatMap((line) => spansOf(JSON.parse(line) as ExportRequest));
}

function spansOf(request: ExportRequest): CollectedSpan[] {
  return request.resourceSpans.flatMap(({ resource, scopeSpans }) => {
    const service = attributesOf(resource?.attributes)['service.name'];
    return (scopeSpans ?? []).flatMap(({ spans }) =>
      (spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
        name: span.name,
        kind: KINDS[span.kind] ?? 'unspecified',
        ...(typeof service === 'string' ? { service } : {}),
        startMs: Number(BigInt(span.startTimeUnixNano) / 1_000_000n),
        endMs: Number(BigInt(span.endTimeUnixNano) / 1_000_000n),
        attributes: attributesOf(span.attributes),
        links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
        status: {
          code: span.status?.code === 2 ? 'error' : span.status?.code === 1 ? 'ok' : 'unset',
          ...(span.status?.message ? { message: span.status.message } : {}),
        },
      })),
    );
  });
}

function attributesOf(keyValues: KeyValues | undefined): Record<string, unknown> {
  return Object.fromEntries((keyValues ?? []).map(({ key, value }) => [key, attributeValue(value)]));
}

function attributeValue(value: AnyValue): unknown {
  if ('stringValue' in value) return value.stringValue;
  if ('boolValue' in value) return value.boolValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  return (value.arrayValue.values ?? []).map(attributeValue);
}
