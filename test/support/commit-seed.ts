import { execFileSync } from 'node:child_process';
import { fnv1a32 } from '../../harness/hash.js';

/**
 * The fast-check seed of `npm test`'s generated chaos checks: drawn from the last commit that
 * changed anything but bench/'s figures, so that one commit generates the same schedules on every
 * machine (CI meets what its author's run met), each change to the code new ones, and committing
 * measured figures afterwards moves none. `npm run chaos` draws its seeds at random.
 */
export function commitSeed(): number {
  const commit = execFileSync('git', ['log', '-1', '--format=%H', '--', '.', ':(exclude)bench'], {
    encoding: 'utf8',
  }).trim();
  return fnv1a32(commit) % 2 ** 31;
}
