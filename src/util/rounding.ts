/**
 * Rounding of figures for reports, logs and JSON documents: seconds, milliseconds and ratios
 * shown to three decimals (a millisecond of a second, a microsecond of a millisecond), so that
 * documents stay short and stable to compare. One function, so every report rounds alike.
 */

/** `x` rounded to three decimal places (half away from zero for positives, as Math.round). */
export function roundTo3Decimals(x: number): number {
  return Math.round(x * 1000) / 1000;
}
