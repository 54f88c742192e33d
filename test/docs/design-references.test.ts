import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// The code and the docs cite the design as "DESIGN §n": each must name a section of
// docs/design.md that exists, so a reader who follows one lands where it points.

const ROOT = join(import.meta.dirname, '..', '..');
const FOLDERS = [
  'bin',
  'lib',
  'lambdas',
  'cli',
  'sandbox',
  'demo',
  'test',
  'bench',
  'chaos',
  'soak',
  'harness',
  'docs',
];

const texts = [
  'README.md',
  ...FOLDERS.flatMap((folder) =>
    readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
      .filter((name) => /\.(ts|mjs|md)$/.test(name))
      .map((name) => `${folder}/${name}`),
  ),
];
const design = readFileSync(join(ROOT, 'docs', 'design.md'), 'utf8');
const sections = [...design.matchAll(/^## (\d+)\. \S/gm)].map((match) => Number(match[1]));

describe('docs/design.md', () => {
  it('numbers its sections 1, 2, 3 … in order', () => {
    expect(sections.length).toBeGreaterThanOrEqual(11);
    expect(sections).toEqual(sections.map((_, index) => index + 1));
  });

  it('has the section every "DESIGN §n" of the code and the docs names', () => {
    const cited = texts.flatMap((file) =>
      [...readFileSync(join(ROOT, file), 'utf8').matchAll(/DESIGN §(\d+)/g)].map((match) => ({
        file,
        section: Number(match[1]),
      })),
    );
    expect(cited.length).toBeGreaterThan(50);
    expect(cited.filter(({ section }) => !sections.includes(section))).toEqual([]);
  });
});
