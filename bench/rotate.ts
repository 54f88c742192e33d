/**
 * The items in a different order each round, so that none always runs first or right after
 * another: on a machine that is busy with other work too, drift then falls on all of them alike.
 */
export function rotate<T>(items: readonly T[], round: number): T[] {
  const shift = round % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}
