/**
 * Sums the CloudWatch EMF metrics a function prints (Powertools writes one JSON line per flush),
 * so the local report reads the consumer's own counters, as a dashboard would in AWS.
 */
export class MetricsTally {
  readonly #totals = new Map<string, number>();

  /** Takes one output line; returns false for lines that are not EMF (logs). */
  add(line: string): boolean {
    if (!line.includes('"_aws"')) return false;
    let document: { _aws?: { CloudWatchMetrics?: { Metrics?: { Name: string }[] }[] } } & Record<
      string,
      unknown
    >;
    try {
      document = JSON.parse(line);
    } catch {
      return false;
    }
    for (const directive of document._aws?.CloudWatchMetrics ?? []) {
      for (const { Name } of directive.Metrics ?? []) {
        const value = document[Name];
        const sum = Array.isArray(value)
          ? value.reduce((a: number, b: number) => a + b, 0)
          : Number(value ?? 0);
        this.#totals.set(Name, (this.#totals.get(Name) ?? 0) + sum);
      }
    }
    return true;
  }

  get(name: string): number {
    return this.#totals.get(name) ?? 0;
  }
}
