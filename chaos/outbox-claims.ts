/** A claim DynamoDB granted, as its holder saw it: the steps are ticks of the run's request log. */
export interface ClaimGrant {
  key: string;
  owner: string;
  /** When the claim was asked for, and when its grant came back. */
  askedAt: number;
  grantedAt: number;
  /** The claim's clock and the end of its lease, from the request. */
  now: number;
  expiresAt: number;
  /**
   * The schedule's clock when the grant came back. A request held on the wire (a delay, a stalled
   * invocation) may be applied after the clock has passed other leases, although its own `now` is
   * older.
   */
  clockAtGrant: number;
  /**
   * The schedule's clock at its holder's timeout: until then the holder may act on the claim. Its
   * lease (`expiresAt`, on the holder's own clock) outlasts that by the margin a skew between two
   * clocks may eat (DESIGN §11).
   */
  liveUntil: number;
}

/** Two owners that held one message's claim at once. */
export interface ClaimOverlap {
  key: string;
  first: ClaimGrant;
  second: ClaimGrant;
}

/**
 * The claims every invocation of a run asked for, got and let go of (a release or a SENT mark), in
 * the order the harness saw them — to check that no message is ever held by two owners at once.
 */
export class ClaimLog {
  readonly grants: ClaimGrant[] = [];
  /** `owner key` → when it started letting go of the message's claim, each time. */
  readonly #lettingGo = new Map<string, number[]>();
  #tick = 0;

  asking(): number {
    return ++this.#tick;
  }

  granted(grant: Omit<ClaimGrant, 'grantedAt'>): void {
    this.grants.push({ ...grant, grantedAt: ++this.#tick });
  }

  lettingGo(owner: string, key: string): void {
    const name = `${owner} ${key}`;
    this.#lettingGo.set(name, [...(this.#lettingGo.get(name) ?? []), ++this.#tick]);
  }

  /**
   * Grants that were surely both live at once: the first came back before the second was asked
   * for, its holder had not started letting go before the second came back, and its holder's
   * invocation had not timed out when the second came back (the latest moment DynamoDB can have
   * applied the second; by then a claim past its holder's life is anyone's, which is how the outbox
   * recovers from a dead holder). Judged on the schedule's clock, not the holders' skewed ones.
   * Conservative: requests in flight together never count.
   */
  overlaps(): ClaimOverlap[] {
    const found: ClaimOverlap[] = [];
    for (const second of this.grants) {
      for (const first of this.grants) {
        if (first.key !== second.key || first.owner === second.owner) continue;
        const stillHeld =
          first.grantedAt < second.askedAt &&
          first.liveUntil > second.clockAtGrant &&
          !(this.#lettingGo.get(`${first.owner} ${first.key}`) ?? []).some(
            (tick) => tick > first.grantedAt && tick < second.grantedAt,
          );
        if (stillHeld) found.push({ key: second.key, first, second });
      }
    }
    return found;
  }
}
