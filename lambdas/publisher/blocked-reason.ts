/**
 * Why a message was not sent behind `messages[blocker]` of its group: the publisher's words, which
 * the client repeats when a later round leaves the blocker `unknown` (DESIGN §6).
 */
export function blockedBy(blocker: number, blockerMayBeSent: boolean): string {
  return (
    `messages[${blocker}] of the same group ${blockerMayBeSent ? 'may not have been sent' : 'failed'}, ` +
    "and sending this one would break the group's order"
  );
}
