/**
 * What the schedules' effects did, as the world outside Oncely would see it: how often each
 * message's effect was started and applied, and in what order per group. Transactional effects are
 * DynamoDB writes and are read back from their table instead (see chaos-operations.ts).
 */
export class EffectLedger {
  /** Key → how many runs of its effect began. */
  readonly started = new Map<string, number>();
  /** Key → how many times its effect was applied. */
  readonly applied = new Map<string, number>();
  /** Group → keys in the order their effect was first applied. */
  readonly orderByGroup = new Map<string, string[]>();
  /** Keys whose one-off behaviour (fail-once, unknown-once) has been used up. */
  readonly #spent = new Set<string>();

  start(key: string): void {
    this.started.set(key, (this.started.get(key) ?? 0) + 1);
  }

  apply(key: string, group: string): void {
    const count = (this.applied.get(key) ?? 0) + 1;
    this.applied.set(key, count);
    if (count === 1) {
      const order = this.orderByGroup.get(group) ?? [];
      order.push(key);
      this.orderByGroup.set(group, order);
    }
  }

  /** True the first time it is asked for a key: that run gets the one-off behaviour. */
  firstTime(key: string): boolean {
    if (this.#spent.has(key)) return false;
    this.#spent.add(key);
    return true;
  }
}
