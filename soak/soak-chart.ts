import { bucketSecondsFor, completionBuckets } from './series.js';
import type { SoakResult } from './soak-run.js';

const WIDTH = 820;
const PANEL_HEIGHT = 160;
const PLOT = { left: 70, right: 180, top: 40, gap: 46 };
const COLOURS = ['#2f7d4a', '#4a86c5', '#d9822b', '#8e44ad', '#c0392b', '#7f8c8d', '#16a085', '#2c3e50'];

interface Line {
  label: string;
  points: { x: number; y: number }[];
}

/**
 * The soak over time, as an SVG written by hand (no dependency; renders on GitHub): messages
 * completed per second, end-to-end latency p50 and p99, each function's heap, the emulators' memory.
 */
export function soakChartSvg(result: SoakResult): string {
  const bucketSeconds = bucketSecondsFor(result);
  const buckets = completionBuckets(result, bucketSeconds);
  const minutes = (seconds: number) => seconds / 60;
  const mid = (from: number) => minutes(from + bucketSeconds / 2);
  const mib = (bytes: number | undefined) => (bytes ?? 0) / 2 ** 20;
  const functions = [...new Set(result.samples.flatMap((sample) => Object.keys(sample.functionHeapBytes)))];
  const panels: { title: string; unit: string; lines: Line[] }[] = [
    {
      title: `Messages completed per second (${bucketSeconds} s buckets)`,
      unit: 'msg/s',
      lines: [
        {
          label: 'completed',
          points: buckets.map((b) => ({ x: mid(b.fromSeconds), y: b.completedPerSecond })),
        },
      ],
    },
    {
      title: 'End-to-end latency, first publish to COMPLETED',
      unit: 's',
      lines: [
        { label: 'p50', points: buckets.map((b) => ({ x: mid(b.fromSeconds), y: b.p50Ms / 1000 })) },
        { label: 'p99', points: buckets.map((b) => ({ x: mid(b.fromSeconds), y: b.p99Ms / 1000 })) },
      ],
    },
    {
      title: 'Each function’s heap in use (its largest worker’s)',
      unit: 'MiB',
      lines: functions.map((name) => ({
        label: shortName(name),
        points: result.samples.flatMap((s) =>
          s.functionHeapBytes[name] === undefined
            ? []
            : [{ x: minutes(s.atSeconds), y: mib(s.functionHeapBytes[name]) }],
        ),
      })),
    },
    {
      title: 'The emulators: DynamoDB Local’s resident memory, the host’s heap',
      unit: 'MiB',
      lines: [
        {
          label: 'DynamoDB Local (RSS)',
          points: result.samples.map((s) => ({
            x: minutes(s.atSeconds),
            y: mib(s.dynamodbLocalResidentBytes),
          })),
        },
        {
          label: 'host heap (SQS emulator …)',
          points: result.samples.map((s) => ({ x: minutes(s.atSeconds), y: mib(s.hostHeapUsedBytes) })),
        },
      ],
    },
  ];
  const xMax = Math.max(1, minutes(result.totalSeconds));
  const plotWidth = WIDTH - PLOT.left - PLOT.right;
  const height = PLOT.top + panels.length * (PANEL_HEIGHT + PLOT.gap) + 20;
  const parts = panels.map((panel, index) => {
    const top = PLOT.top + index * (PANEL_HEIGHT + PLOT.gap);
    const yMax = niceMax(Math.max(0, ...panel.lines.flatMap((line) => line.points.map((p) => p.y))));
    const x = (value: number) => PLOT.left + (value / xMax) * plotWidth;
    const y = (value: number) => top + PANEL_HEIGHT - (value / yMax) * PANEL_HEIGHT;
    const grid = [0, 0.25, 0.5, 0.75, 1].map((f) => {
      const value = yMax * f;
      return (
        `<line x1="${PLOT.left}" x2="${PLOT.left + plotWidth}" y1="${y(value)}" y2="${y(value)}" stroke="#ddd"/>` +
        `<text x="${PLOT.left - 6}" y="${y(value) + 4}" text-anchor="end">${format(value)}</text>`
      );
    });
    const lines = panel.lines.map((line, n) => {
      const colour = COLOURS[n % COLOURS.length];
      const path = line.points.map((p) => `${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`).join(' ');
      return (
        `<polyline fill="none" stroke="${colour}" stroke-width="1.5" points="${path}"/>` +
        `<rect x="${PLOT.left + plotWidth + 14}" y="${top + 8 + n * 16}" width="10" height="10" fill="${colour}"/>` +
        `<text x="${PLOT.left + plotWidth + 30}" y="${top + 17 + n * 16}">${escapeXml(line.label)}</text>`
      );
    });
    const xTicks = Array.from({ length: 6 }, (_, i) => (xMax * i) / 5).map(
      (value) =>
        `<text x="${x(value)}" y="${top + PANEL_HEIGHT + 16}" text-anchor="middle">${format(value)} min</text>`,
    );
    return (
      `<text x="${PLOT.left}" y="${top - 10}" font-weight="bold">${escapeXml(panel.title)} (${panel.unit})</text>` +
      grid.join('') +
      xTicks.join('') +
      lines.join('')
    );
  });
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11">` +
    `<title>${escapeXml(`The soak over ${format(xMax)} minutes: ${panels.map((panel) => panel.title).join('; ')}`)}</title>` +
    `<rect width="100%" height="100%" fill="#fff"/>${parts.join('')}</svg>\n`
  );
}

/** `ShopStack-ShopConsumer1A2B3C` → `ShopConsumer`: the construct's name without the hash. */
function shortName(functionName: string): string {
  const last = functionName.split('-').at(-1) ?? functionName;
  return last.replace(/[0-9A-F]{6,}$/, '') || functionName;
}

function niceMax(value: number): number {
  if (value <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  return ([1, 2, 2.5, 5, 10].find((step) => step * magnitude >= value) ?? 10) * magnitude;
}

const format = (value: number) =>
  Number.isInteger(value) ? String(value) : value.toFixed(value < 10 ? 1 : 0);
const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
