/** Number formatting shared by the benchmark lines and the Markdown table. */

const int = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** `12,345`. */
export function fmtInt(n: number): string {
  return int.format(n);
}

/** `3.21` (fixed digits, no grouping beyond thousands). */
export function fmtNum(n: number, digits = 2): string {
  return new Intl.NumberFormat("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }).format(n);
}

/** `0.88x`. */
export function fmtRatio(r: number): string {
  return `${r < 0.1 ? r.toPrecision(2) : fmtNum(r, 2)}x`;
}

/** Milliseconds with a sensible precision: `0.042 ms`, `3.2 ms`, `120 ms`. */
export function fmtMs(ms: number): string {
  if (ms < 1) return `${fmtNum(ms, 3)} ms`;
  if (ms < 10) return `${fmtNum(ms, 1)} ms`;
  return `${fmtInt(ms)} ms`;
}

/** Nanoseconds per operation: `812 ns`, `1.4 µs`. */
export function fmtNs(ns: number): string {
  return ns < 1000 ? `${fmtInt(ns)} ns` : `${fmtNum(ns / 1000, 2)} µs`;
}

/** Rounds figures for the JSON file (3 significant decimals are plenty). */
export function roundFigure(n: number): number {
  if (!Number.isFinite(n)) return n;
  const abs = Math.abs(n);
  const digits = abs >= 100 ? 1 : abs >= 1 ? 3 : 6;
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
