import { describe, expect, it } from 'vitest';
import { apiReports } from '../../tools/api-report.js';

// Every change to what the entry points export is a visible diff of docs/api/*.api.md (DESIGN §10).
// dist/ is what `npm test` built first.

describe('the API report', () => {
  it('matches the surface the built entry points declare', { timeout: 120_000 }, () => {
    const results = apiReports({ update: false });
    expect(results.map(({ entry }) => entry)).toEqual(['consumer', 'idempotency', 'client', 'outbox', 'cdk']);
    expect(results.flatMap(({ problems }) => problems)).toEqual([]);
    const changed = results.filter(({ changed }) => changed).map(({ entry }) => `docs/api/${entry}.api.md`);
    expect(
      changed,
      'The public API changed: run `npm run build && npm run api`, review the diff of docs/api/, and ' +
        'record the change for users in CHANGELOG.md (## Unreleased).',
    ).toEqual([]);
  });
});
