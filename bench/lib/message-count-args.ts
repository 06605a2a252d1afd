/**
 * The command line of the per-message counters (bench/zenoh-instructions.ts,
 * bench/remote-instructions.ts): `[instructions|cpu] [warm] [count] [perBatch] [-- <zest args>]`.
 */

export interface MessageCountArgs {
  readonly mode: "instructions" | "cpu";
  readonly warm: number;
  readonly count: number;
  readonly perBatch: number;
  /** Arguments after `--`, handed to zest. */
  readonly zestArgs: string[];
}

/** Parses `argv` (after the script), with the script's defaults; prints `usageLine` and exits 2 on a bad one. */
export function parseMessageCountArgs(
  argv: readonly string[],
  usageLine: string,
  defaults: { warm: number; count: number; perBatch: number },
): MessageCountArgs {
  const usage = (): never => {
    console.error(usageLine);
    process.exit(2);
  };
  const dash = argv.indexOf("--");
  const own = dash === -1 ? argv : argv.slice(0, dash);
  const [mode = "instructions", warmArg, countArg, perBatchArg] = own;
  if (mode !== "instructions" && mode !== "cpu") return usage();
  const warm = Number(warmArg ?? defaults.warm);
  const count = Number(countArg ?? defaults.count);
  const perBatch = Number(perBatchArg ?? defaults.perBatch);
  for (const n of [warm, count, perBatch]) if (!Number.isSafeInteger(n) || n < 1) usage();
  return { mode, warm, count, perBatch, zestArgs: dash === -1 ? [] : argv.slice(dash + 1) };
}
