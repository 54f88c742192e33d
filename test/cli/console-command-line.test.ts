import { describe, expect, it } from 'vitest';
import { CliUsageError, parseCommandLine } from '../../cli/command-line.js';

// `oncely console` on the command line (docs/console.md): its target, its port, its mistakes.

describe('oncely console, on the command line', () => {
  it('takes a target, an output prefix and a port', () => {
    expect(
      parseCommandLine(['console', '--stack', 'Shop-dev', '--port', '8080', '--output-prefix', 'Orders'], {}),
    ).toEqual({
      name: 'console',
      target: { kind: 'stack', stackName: 'Shop-dev', outputPrefix: 'Orders' },
      json: false,
      port: 8080,
      allowActions: false,
    });
    expect(parseCommandLine(['console', '--stack', 'S', '--allow-actions'], {})).toMatchObject({
      allowActions: true,
    });
    expect(parseCommandLine(['console'], { ONCELY_READY_FILE: 'r.json' })).toMatchObject({
      target: { kind: 'sandbox', readyFile: 'r.json' },
      port: undefined,
    });
  });

  it('refuses a port that is none, a word too many, and no target', () => {
    for (const port of ['0', '65536', 'http', '80.5']) {
      expect(() => parseCommandLine(['console', '--port', port, '--stack', 'S'], {})).toThrow(
        new CliUsageError(`--port takes a port number from 1 to 65535, got "${port}".`),
      );
    }
    expect(() => parseCommandLine(['console', 'now', '--stack', 'S'], {})).toThrow(
      'Unexpected argument: now',
    );
    expect(() => parseCommandLine(['console'], {})).toThrow(/Which pipeline\?/);
  });
});
