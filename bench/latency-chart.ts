import { BATCH_CONSUMERS, type BatchConsumer, type BatchLatency } from './batch-latency.js';

const WIDTH = 760;
const HEIGHT = 430;
const PLOT = { left: 70, right: 20, top: 56, bottom: 110 };
const TITLE = '10-record FIFO batch: time to the partial batch response';
const COLOURS: Record<BatchConsumer, string> = {
  transactional: '#2f7d4a',
  lease: '#4a86c5',
  powertools: '#d9822b',
};

/**
 * (2) as an SVG bar chart, written by hand so that it needs no dependency and renders anywhere
 * (GitHub included): per group count, one bar per consumer at its median, a whisker from p10 to p90.
 */
export function latencyChartSvg(results: readonly BatchLatency[], latencyMs: number): string {
  const groupCounts = [...new Set(results.map((result) => result.groups))];
  const consumers = [...new Set(results.map((result) => result.consumer))];
  const ticks = axisTicks(Math.max(...results.map((result) => result.latency.p90)));
  const top = ticks.at(-1) ?? 1;
  const plotWidth = WIDTH - PLOT.left - PLOT.right;
  const plotHeight = HEIGHT - PLOT.top - PLOT.bottom;
  const y = (ms: number) => PLOT.top + plotHeight - (ms / top) * plotHeight;
  const slot = plotWidth / groupCounts.length;
  const barWidth = (slot * 0.75) / consumers.length;

  const grid = ticks.map(
    (ms) =>
      `<line x1="${PLOT.left}" x2="${WIDTH - PLOT.right}" y1="${y(ms)}" y2="${y(ms)}" stroke="#ddd"/>` +
      `<text x="${PLOT.left - 8}" y="${y(ms) + 4}" text-anchor="end">${Number.isInteger(ms) ? ms : round(ms)}</text>`,
  );
  const bars = groupCounts.flatMap((groups, slotIndex) => {
    const left = PLOT.left + slot * slotIndex + slot * 0.125;
    const label = `<text x="${PLOT.left + slot * (slotIndex + 0.5)}" y="${PLOT.top + plotHeight + 20}" text-anchor="middle">${groups} ${groups === 1 ? 'group' : 'groups'}</text>`;
    return [
      label,
      ...consumers.map((consumer, index) => {
        const result = results.find(
          (candidate) => candidate.groups === groups && candidate.consumer === consumer,
        );
        if (!result) return '';
        const { median, p10, p90 } = result.latency;
        const x = left + barWidth * index;
        const centre = x + barWidth / 2;
        return (
          `<rect x="${x}" y="${y(median)}" width="${barWidth - 2}" height="${y(0) - y(median)}" fill="${COLOURS[consumer]}"/>` +
          `<line x1="${centre}" x2="${centre}" y1="${y(p10)}" y2="${y(p90)}" stroke="#222"/>` +
          `<line x1="${centre - 4}" x2="${centre + 4}" y1="${y(p90)}" y2="${y(p90)}" stroke="#222"/>` +
          `<line x1="${centre - 4}" x2="${centre + 4}" y1="${y(p10)}" y2="${y(p10)}" stroke="#222"/>` +
          `<text x="${centre}" y="${y(p90) - 5}" text-anchor="middle" font-size="10">${round(median)}</text>`
        );
      }),
    ];
  });
  const legend = consumers.map((consumer, index) => {
    const legendY = HEIGHT - PLOT.bottom + 44 + index * 18;
    return (
      `<rect x="${PLOT.left}" y="${legendY - 10}" width="12" height="12" fill="${COLOURS[consumer]}"/>` +
      `<text x="${PLOT.left + 18}" y="${legendY}">${escapeXml(BATCH_CONSUMERS[consumer])}</text>`
    );
  });

  return [
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12" fill="#222">`,
    `<title>${TITLE}, by message groups: ${escapeXml(consumers.map((consumer) => BATCH_CONSUMERS[consumer]).join(', '))}</title>`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#fff"/>`,
    `<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${TITLE}</text>`,
    `<text x="${WIDTH / 2}" y="40" text-anchor="middle">median (bar) and p10–p90 (whisker), ms; +${latencyMs} ms per DynamoDB request; lower is better</text>`,
    ...grid,
    `<line x1="${PLOT.left}" x2="${WIDTH - PLOT.right}" y1="${y(0)}" y2="${y(0)}" stroke="#222"/>`,
    ...bars,
    ...legend,
    '</svg>',
    '',
  ].join('\n');
}

/** About four round steps (1, 2, 2.5 or 5 × 10ⁿ) from 0 to at least `max`. */
export function axisTicks(max: number): number[] {
  const rough = Math.max(max, 1) / 4;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = ([1, 2, 2.5, 5, 10].find((candidate) => candidate * magnitude >= rough) ?? 10) * magnitude;
  return Array.from({ length: Math.ceil(Math.max(max, 1) / step) + 1 }, (_, index) => index * step);
}

function round(ms: number): string {
  return ms >= 100 ? ms.toFixed(0) : ms.toFixed(1);
}

function escapeXml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
