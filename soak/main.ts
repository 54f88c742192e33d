/**
 * `npm run soak [-- --quick --messages N --groups G --rate R --seed S]`: the shop's pipeline in the
 * sandbox under steady load (docs/soak.md). Full size: at least 100,000 messages over 5,000 groups
 * for at least 15 minutes, figures and chart to bench/SOAK.md and bench/soak.svg. `--quick` (about
 * a minute, what `npm test` runs): 1,500 messages over 150 groups, to .oncely/soak-quick/.
 * Exit code 1 if a check failed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { soakChartSvg } from './soak-chart.js';
import { judgeSoak, SOAK_SIZES } from './soak-judgement.js';
import { soakMarkdown } from './soak-report.js';
import { runSoak } from './soak-run.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    messages: { type: 'string' },
    groups: { type: 'string' },
    rate: { type: 'string' },
    seed: { type: 'string', default: '1' },
  },
});
const size = SOAK_SIZES[values.quick ? 'quick' : 'full'];
const directory = values.quick ? '.oncely/soak-quick' : 'bench';
const started = Date.now();
const result = await runSoak({
  ...size.run,
  messages: Number(values.messages ?? size.run.messages),
  groups: Number(values.groups ?? size.run.groups),
  ratePerSecond: Number(values.rate ?? size.run.ratePerSecond),
  seed: Number(values.seed),
  print: (line) => console.log(line),
});
const judgement = judgeSoak(result, size.minimum);
mkdirSync(directory, { recursive: true });
writeFileSync(`${directory}/soak.svg`, soakChartSvg(result));
writeFileSync(`${directory}/SOAK.md`, soakMarkdown(result, judgement, new Date(started)));
// The raw samples and completions, for a closer look than the report's: large, so never committed.
mkdirSync('.oncely', { recursive: true });
writeFileSync('.oncely/soak-result.json', JSON.stringify(result));
for (const check of judgement.checks)
  console.log(`${check.ok ? 'ok  ' : 'FAIL'} ${check.name}: ${check.detail}`);
console.log(`Figures in ${directory}/SOAK.md, the chart in ${directory}/soak.svg.`);
process.exitCode = judgement.passed ? 0 : 1;
