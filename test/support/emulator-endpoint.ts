import { inject } from 'vitest';

/**
 * The endpoint of one of the run's emulators, which the whole suite's global setup starts. The fast
 * tier (`npm run test:unit`) starts none: a file that asks for one there is in the wrong tier.
 */
export function emulatorEndpoint(name: 'dynamodbEndpoint' | 'sqsEndpoint'): string {
  const endpoint = inject(name);
  if (!endpoint) {
    throw new Error(
      `no ${name}: this file needs the emulators, which the fast tier does not start. ` +
        'Take it out of FAST_TESTS in vitest.config.ts.',
    );
  }
  return endpoint;
}
