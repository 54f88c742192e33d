import type { Spread } from '../../harness/statistics.js';

/** Milliseconds as (5c) writes them: three decimals. */
export const ms = (value: number) => `${value.toFixed(3)} ms`;

/** A spread as (5c) writes it: `median (p10 – p90)`. */
export const spread = (value: Spread, unit: (figure: number) => string = ms) =>
  `${unit(value.median)} (${unit(value.p10)} – ${unit(value.p90)})`;
