import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type ApiItem, apiReports, REPORT_FOLDER, type ReportResult } from '../../tools/api-report.js';

// Every change to what the entry points export is a visible diff of docs/api/*.api.md, every
// exported declaration has TSDoc, and every option a user may leave out says what it defaults to
// (DESIGN §10). Both are read from API
// Extractor's view of dist/, which `npm test` built first.

let results: ReportResult[];
beforeAll(() => {
  results = apiReports({ update: false });
}, 240_000);

/** The interfaces a user fills in: a function's options and input, a construct's props and settings. */
const FILLED_IN = /(Options|Props|Settings|Entry|Input|Write|Message)$/;

/** `Interface.property` for each optional property of those interfaces, with its comment. */
function optionalProperties(item: ApiItem): { name: string; docComment: string }[] {
  const here =
    item.kind === 'Interface' && FILLED_IN.test(item.name ?? '')
      ? (item.members ?? [])
          .filter((member) => member.kind === 'PropertySignature' && member.isOptional)
          .map((member) => ({ name: `${item.name}.${member.name}`, docComment: member.docComment ?? '' }))
      : [];
  // A namespace's interfaces (the Standard Schema spec's) are not filled in by a user of Oncely.
  const inside = item.kind === 'Namespace' ? [] : (item.members ?? []).flatMap(optionalProperties);
  return [...here, ...inside];
}

describe('the API report', () => {
  it('matches the surface the built entry points declare', () => {
    expect(results.map(({ entry }) => entry)).toEqual(['consumer', 'idempotency', 'client', 'outbox', 'cdk']);
    // The entry points share one program: a problem of a shared declaration is reported by each.
    expect([...new Set(results.flatMap(({ problems }) => problems))]).toEqual([]);
    const changed = results.filter(({ changed }) => changed).map(({ entry }) => `docs/api/${entry}.api.md`);
    expect(
      changed,
      'The public API changed: run `npm run build && npm run api`, review the diff of docs/api/, and ' +
        'record the change for users in CHANGELOG.md (## Unreleased).',
    ).toEqual([]);
  });

  it('gives every optional option and construct prop a @default', () => {
    const optional = results.flatMap(({ model }) => optionalProperties(model));
    expect(optional.length).toBeGreaterThan(40);
    const undocumented = optional.filter(({ docComment }) => !/@default\b/.test(docComment));
    expect([...new Set(undocumented.map(({ name }) => name))].sort()).toEqual([]);
  });

  it('documents every exported declaration', () => {
    // API Extractor marks a declaration without a TSDoc summary `// (undocumented)` on the line before it.
    const undocumented = results.flatMap(({ entry }) => {
      const lines = readFileSync(join(REPORT_FOLDER, `${entry}.api.md`), 'utf8').split('\n');
      return lines.flatMap((line, index) =>
        line.includes('(undocumented)') ? [`${entry}: ${lines[index + 1]?.trim()}`] : [],
      );
    });
    expect(undocumented).toEqual([]);
  });

  it('names no type its entry point does not export', () => {
    // A signature naming an unexported type leaves users a type they cannot import or name.
    const forgotten = results.flatMap(({ entry }) =>
      readFileSync(join(REPORT_FOLDER, `${entry}.api.md`), 'utf8')
        .split('\n')
        .filter((line) => line.includes('(ae-forgotten-export)'))
        .map((line) => `${entry}: ${line.replace(/^\/\/ Warning: /, '')}`),
    );
    expect(forgotten).toEqual([]);
  });
});
