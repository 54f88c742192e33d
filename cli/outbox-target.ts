import { OUTBOX_OUTPUTS, type OutboxResources, outboxFromOutputs } from '../lib/constructs/outbox-outputs.js';
import { NoOutboxError, SeveralOutboxesError } from './operations-errors.js';
import type { TargetConnection } from './target.js';

/**
 * The outbox among a target's outputs: the one with `outputPrefix` when given, else the only one
 * there is (an outbox's outputs end in {@link OUTBOX_OUTPUTS}' names, after its prefix).
 */
export function findOutbox(target: TargetConnection, outputPrefix?: string): OutboxResources {
  if (outputPrefix !== undefined) return outboxFromOutputs(target.name, target.outputs, outputPrefix);
  const prefixes = outboxPrefixes(target.outputs);
  const [prefix] = prefixes;
  if (prefix === undefined) {
    throw new NoOutboxError(
      `${capitalised(target.name)} has no OncelyOutbox: none of its outputs is named ${OUTBOX_OUTPUTS.tableName}. Deploy the stack ` +
        'with its outbox, or give the target that has it.',
    );
  }
  if (prefixes.length > 1) {
    const named = prefixes.map((each) => (each === '' ? "'' (no prefix)" : each)).join(', ');
    throw new SeveralOutboxesError(
      `${capitalised(target.name)} has ${prefixes.length} outboxes, with the output prefixes ${named}: say which ` +
        'with --output-prefix PREFIX.',
    );
  }
  return outboxFromOutputs(target.name, target.outputs, prefix);
}

/** The output prefix of each outbox among a target's outputs (`''` for the unprefixed one). */
export function outboxPrefixes(outputs: Readonly<Record<string, string>>): string[] {
  const marker = OUTBOX_OUTPUTS.tableName;
  return Object.keys(outputs)
    .filter((key) => key.endsWith(marker))
    .map((key) => key.slice(0, -marker.length));
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
