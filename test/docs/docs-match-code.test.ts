import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONSUMER_ENVIRONMENT } from '../../lambdas/consumer/environment.js';
import { CONSUMER_METRICS } from '../../lambdas/consumer/telemetry.js';
import { OUTBOX_ENVIRONMENT } from '../../lambdas/outbox/environment.js';
import { OUTBOX_METRICS } from '../../lambdas/outbox/metrics.js';
import { SHOP_ENVIRONMENT } from '../../lambdas/shop/consumer/environment.js';
import { OUTBOX_LOG_GROUP_OUTPUTS, OUTBOX_OUTPUTS } from '../../lib/constructs/outbox-outputs.js';
import { resolveOutboxSettings } from '../../lib/constructs/outbox-settings.js';
import {
  PIPELINE_CACHE_OUTPUTS,
  PIPELINE_LOG_GROUP_OUTPUTS,
  PIPELINE_OUTPUTS,
} from '../../lib/constructs/pipeline-outputs.js';
import { resolveSettings } from '../../lib/constructs/pipeline-settings.js';

// Where the docs list names the code defines, they must list exactly those; and every relative
// link in README.md and docs/*.md must lead to a file (and a heading) that exists.

const ROOT = join(import.meta.dirname, '..', '..');
const DOCS = join(ROOT, 'docs');

const markdownFiles = [
  join(ROOT, 'README.md'),
  ...readdirSync(DOCS)
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(DOCS, name)),
];

function read(file: string): string {
  return readFileSync(file, 'utf8');
}

/** The document's lines outside fenced code blocks, each with its own text. */
function proseLines(markdown: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) lines.push(line);
  }
  return lines;
}

function headingOf(line: string): { level: number; text: string } | undefined {
  const match = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
  return match ? { level: (match[1] as string).length, text: match[2] as string } : undefined;
}

/** The lines under the heading whose text is `heading`, up to the next heading of its level or above. */
function section(markdown: string, heading: string): string[] {
  const lines = proseLines(markdown);
  const start = lines.findIndex((line) => headingOf(line)?.text === heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const level = headingOf(lines[start] as string)?.level ?? 1;
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((line) => {
    const found = headingOf(line);
    return found !== undefined && found.level <= level;
  });
  return end < 0 ? rest : rest.slice(0, end);
}

/** The names in backticks in the first column of the first table of the lines, header row left out. */
function firstColumnNames(lines: string[]): string[] {
  const start = lines.findIndex((line) => line.trimStart().startsWith('|'));
  if (start < 0) throw new Error('no table');
  const rows: string[] = [];
  for (const line of lines.slice(start)) {
    if (!line.trimStart().startsWith('|')) break;
    rows.push(line);
  }
  // rows[0] is the header, rows[1] the |---| separator.
  return rows.slice(2).flatMap((row) => {
    const firstCell = row.trim().slice(1).split('|')[0] ?? '';
    return [...firstCell.matchAll(/`([^`]+)`/g)].map((match) => match[1] as string);
  });
}

function tableUnder(file: string, heading: string): string[] {
  return firstColumnNames(section(read(join(ROOT, file)), heading));
}

function sorted(values: Iterable<string>): string[] {
  return [...values].sort();
}

describe('the docs list what the code defines', () => {
  it('docs/consumer.md: the metrics table lists exactly CONSUMER_METRICS', () => {
    expect(sorted(tableUnder('docs/consumer.md', 'Metrics'))).toEqual(
      sorted(Object.values(CONSUMER_METRICS)),
    );
  });

  it('docs/consumer.md: the environment table lists exactly CONSUMER_ENVIRONMENT', () => {
    expect(sorted(tableUnder('docs/consumer.md', 'Environment'))).toEqual(
      sorted(Object.values(CONSUMER_ENVIRONMENT)),
    );
  });

  it('docs/construct.md: the settings table lists exactly the PipelineSettings', () => {
    expect(sorted(tableUnder('docs/construct.md', 'Settings'))).toEqual(
      sorted(Object.keys(resolveSettings({}))),
    );
  });

  it("docs/construct.md: the outputs table lists exactly PIPELINE_OUTPUTS, the log groups and the cache's", () => {
    expect(sorted(tableUnder('docs/construct.md', 'Outputs'))).toEqual(
      sorted([
        ...Object.values(PIPELINE_OUTPUTS),
        ...Object.values(PIPELINE_LOG_GROUP_OUTPUTS),
        ...Object.values(PIPELINE_CACHE_OUTPUTS),
      ]),
    );
  });

  it('docs/outbox.md: the environment, metrics, settings and outputs tables list exactly the code’s', () => {
    expect(sorted(tableUnder('docs/outbox.md', 'Environment'))).toEqual(
      sorted(Object.values(OUTBOX_ENVIRONMENT)),
    );
    expect(sorted(tableUnder('docs/outbox.md', 'Metrics'))).toEqual(sorted(Object.values(OUTBOX_METRICS)));
    expect(sorted(tableUnder('docs/outbox.md', 'Settings'))).toEqual(
      sorted(Object.keys(resolveOutboxSettings({}, { sandbox: false }))),
    );
    expect(sorted(tableUnder('docs/outbox.md', 'Outputs'))).toEqual(
      sorted([...Object.values(OUTBOX_OUTPUTS), ...Object.values(OUTBOX_LOG_GROUP_OUTPUTS)]),
    );
  });

  it('docs/example-shop.md: the environment table lists exactly SHOP_ENVIRONMENT', () => {
    expect(sorted(tableUnder('docs/example-shop.md', 'Environment'))).toEqual(
      sorted(Object.values(SHOP_ENVIRONMENT)),
    );
  });
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens; repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = headingOf(line);
    if (!heading) continue;
    const slug = heading.text
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Every relative link of the document: its target, outside code blocks and code spans. */
function relativeLinks(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of proseLines(markdown)) {
    const text = line.replace(/`[^`]*`/g, '');
    for (const match of text.matchAll(/\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1] as string;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      targets.push(target);
    }
  }
  return targets;
}

describe('relative links in README.md and docs/*.md', () => {
  it('finds links to check', () => {
    expect(relativeLinks(read(join(ROOT, 'README.md'))).length).toBeGreaterThan(0);
  });

  for (const file of markdownFiles) {
    it(`every relative link of ${relative(ROOT, file)} leads to an existing file and heading`, () => {
      const broken: string[] = [];
      for (const target of relativeLinks(read(file))) {
        const [path = '', anchor] = target.split('#');
        const linked = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
        if (!existsSync(linked)) {
          broken.push(`${target}: no file ${relative(ROOT, linked)}`);
          continue;
        }
        if (anchor && linked.endsWith('.md') && statSync(linked).isFile()) {
          if (!anchorsOf(read(linked)).has(anchor)) broken.push(`${target}: no heading #${anchor}`);
        }
      }
      expect(broken).toEqual([]);
    });
  }
});
