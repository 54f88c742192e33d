/** The records of one message group, in the order SQS delivered them. */
export interface MessageGroupPlan<R> {
  groupId: string;
  records: R[];
}

/**
 * Splits a FIFO batch into its message groups (DESIGN §5): a group's records keep their delivery
 * order, since they must run in that order; groups come in the order of their first record.
 */
export function planGroups<R>(records: readonly R[], groupOf: (record: R) => string): MessageGroupPlan<R>[] {
  const groups = new Map<string, MessageGroupPlan<R>>();
  for (const record of records) {
    const groupId = groupOf(record);
    let group = groups.get(groupId);
    if (!group) {
      group = { groupId, records: [] };
      groups.set(groupId, group);
    }
    group.records.push(record);
  }
  return [...groups.values()];
}
