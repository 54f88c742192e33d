import { vi } from 'vitest';

// The fast tier (`npm run test:unit`) starts no emulator, sandbox or install: that is what keeps it
// fast. A file of the tier that reaches for one fails here, at once and saying why, rather than
// starting a JVM behind the developer's back.

function refused(what: string): () => never {
  return () => {
    throw new Error(
      `${what}: the fast tier starts no emulator, sandbox or install. ` +
        'This file belongs to the whole suite: take it out of FAST_TESTS in vitest.config.ts.',
    );
  };
}

vi.mock(import('../../sandbox/dynamodb-local.js'), async (original) => ({
  ...(await original()),
  startDynamoDbLocal: refused('startDynamoDbLocal'),
}));
vi.mock(import('../../sandbox/sqs-emulator.js'), async (original) => ({
  ...(await original()),
  startSqsEmulator: refused('startSqsEmulator'),
}));
vi.mock(import('../../sandbox/node-binary.js'), async (original) => ({
  ...(await original()),
  installLambdaNode: refused('installLambdaNode'),
}));
vi.mock(import('../../sandbox/local-sandbox.js'), async (original) => ({
  ...(await original()),
  startSandbox: refused('startSandbox'),
}));
