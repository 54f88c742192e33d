import { describe, expect, it } from 'vitest';
import { pipelinePassed, withPipelineSection } from '../../chaos/chaos-report.js';
import type { PipelineChaosReport } from '../../chaos/pipeline-run.js';
import { FAULT_KINDS, type FaultKind } from '../../harness/faults.js';

const report = (causes: Partial<PipelineChaosReport['deadLetterCauses']> = {}): PipelineChaosReport => ({
  seed: 7,
  published: 79,
  keysChecked: 79,
  violations: [],
  inDoubt: 1,
  needlessInDoubt: 0,
  deadLettered: 2,
  deadLetterReasons: { UnknownMessageTypeError: 1, BusinessRuleViolationError: 1 },
  deadLetterCauses: { intended: 2, businessRule: [], other: [], ...causes },
  faults: Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>,
  faultsNotMet: 0,
  crashes: 2,
  durationMs: 35_000,
});

describe('the pipeline’s section of bench/CHAOS.md', () => {
  const file = [
    '# Fault schedules',
    '',
    '## Generated schedules',
    '',
    '| schedules | 10,000 |',
    '',
    '## The whole pipeline in the sandbox',
    '',
    '| in the DLQ | 209 |',
    '',
    '## Outbox schedules',
    '',
    '| schedules | 2,000 |',
    '',
  ].join('\n');
  const run = { date: '2026-11-28', machine: '2 cores', pipeline: report() };

  it('rewrites only the pipeline section, the others kept as they were', () => {
    const rewritten = withPipelineSection(file, run);
    expect(rewritten).not.toContain('| in the DLQ | 209 |');
    expect(rewritten).toContain(
      '| in the DLQ by cause | intended poison 2, a business rule broken unmeant 0, other 0 |',
    );
    expect(rewritten.startsWith(file.slice(0, file.indexOf('## The whole pipeline')))).toBe(true);
    expect(rewritten.endsWith('## Outbox schedules\n\n| schedules | 2,000 |\n')).toBe(true);
  });

  it('fails the run, and lists the copies, when anything but the intended poison is in the DLQ', () => {
    expect(pipelinePassed(report())).toBe(true);
    const unexpected = report({ businessRule: ['placed-o-3-0'] });
    expect(pipelinePassed(unexpected)).toBe(false);
    const rewritten = withPipelineSection(file, { ...run, pipeline: unexpected });
    expect(rewritten).toContain('- placed-o-3-0: a business rule');
    expect(rewritten).toContain('**VIOLATIONS FOUND.**');
  });

  it('fails the run when one seed gave two sets of faults, or drew a fault no request met', () => {
    const faults = { ...report().faults, 'fail-before': 3 };
    expect(pipelinePassed({ ...report(), faults, rerunFaults: { ...faults } })).toBe(true);
    const differing = { ...report(), faults, rerunFaults: { ...faults, 'fail-before': 4 } };
    expect(pipelinePassed(differing)).toBe(false);
    expect(withPipelineSection(file, { ...run, pipeline: differing })).toContain('DIFFERENT');
    expect(pipelinePassed({ ...report(), faultsNotMet: 1 })).toBe(false);
  });
});
