import { execFileSync } from 'node:child_process';
import { fnv1a32 } from '../../harness/hash.js';

/**
 * The fast-check seed of `npm test`'s generated chaos checks: drawn from the commit under test, so
 * that one commit generates the same schedules on every machine (CI meets what its author's run
 * met) while each new commit explores new ones. `npm run chaos` draws its seeds at random.
 */
export function commitSeed(): number {
  const head = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  return fnv1a32(head) % 2 ** 31;
}
