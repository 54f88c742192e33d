/** CloudFormation's logical ids: letters and digits, at most 255 characters. */
const LOGICAL_ID = /^[A-Za-z0-9]*$/;
const LOGICAL_ID_MAX_LENGTH = 255;
/** Room left in a logical id for the longest output name a construct adds. */
const LONGEST_OUTPUT_NAME = 64;

/**
 * Why an `outputPrefix` cannot start a stack output's logical id, or nothing: a prefix CloudFormation
 * refuses synthesises and then fails the deploy, far from its cause.
 */
export function outputPrefixProblems(prefix: string | undefined): string[] {
  if (prefix === undefined) return [];
  if (!LOGICAL_ID.test(prefix)) {
    return [
      `outputPrefix (${JSON.stringify(prefix)}) may hold only letters and digits (A-Z, a-z, 0-9): it starts the ` +
        'logical ids of stack outputs, which CloudFormation refuses otherwise. Use e.g. "Orders".',
    ];
  }
  if (prefix.length > LOGICAL_ID_MAX_LENGTH - LONGEST_OUTPUT_NAME) {
    return [
      `outputPrefix is ${prefix.length} characters long: at most ${LOGICAL_ID_MAX_LENGTH - LONGEST_OUTPUT_NAME}, so ` +
        `that the logical ids it starts stay within CloudFormation's ${LOGICAL_ID_MAX_LENGTH}.`,
    ];
  }
  return [];
}
