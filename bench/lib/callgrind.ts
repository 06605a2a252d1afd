/**
 * Counting instructions with callgrind (bench/README.md, "Instructions per request"): the
 * wrapper that starts a server under it with counting off, the switch, and the reading of the
 * dump. Shared by bench/instructions.ts (REST) and bench/zenoh-instructions.ts (the zenoh door).
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";

/** V8's optimizing compiler, by the C++ names callgrind reports. */
const COMPILER = /compiler::|Zone|LiveRange|TopTierRegister|Turbofan|Pipeline/;

/** The `spawnServer` wrapper that runs a server under callgrind, counting nothing until switched on. */
export function callgrindWrapper(dir: string): string[] {
  return [
    "valgrind",
    "--tool=callgrind",
    "--instr-atstart=no",
    // V8 writes and rewrites machine code: valgrind must notice it.
    "--smc-check=all-non-file",
    `--callgrind-out-file=${join(dir, "callgrind.out")}`,
  ];
}

/** Runs `callgrind_control <args> <pid>` (`-i on`, `-i off`, `-d` to dump). */
export function callgrindControl(pid: number, ...args: string[]): void {
  execFileSync("callgrind_control", [...args, String(pid)], { stdio: "ignore" });
}

/**
 * Dumps the counts of `pid` and reads them: all instructions, and those of V8's optimizing
 * compiler. The dump is copied to `INSTRUCTIONS_DUMP` (+ `dumpSuffix`, for a run that counts
 * several processes) when set, for callgrind_annotate. Dumping zeroes the counts, and the dump is
 * removed once read: a later call reads what was counted since this one.
 */
export function callgrindTotals(pid: number, dir: string, dumpSuffix = ""): { total: number; compiler: number } {
  callgrindControl(pid, "-d");
  const dump = readdirSync(dir).find((f) => /^callgrind\.out\.\d+(?:\.\d+)?$/.test(f));
  if (dump === undefined) throw new Error("callgrind wrote no dump");
  if (process.env.INSTRUCTIONS_DUMP) copyFileSync(join(dir, dump), process.env.INSTRUCTIONS_DUMP + dumpSuffix);
  const text = execFileSync("callgrind_annotate", ["--threshold=100", join(dir, dump)], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  rmSync(join(dir, dump));
  let total = 0;
  let compiler = 0;
  for (const line of text.split("\n")) {
    const m = /^\s*([\d,]+) \([\s\d.]+%\)\s+(.*)$/.exec(line);
    if (!m) continue;
    const n = Number(m[1]!.replaceAll(",", ""));
    if (m[2]!.includes("PROGRAM TOTALS")) total = n;
    else if (COMPILER.test(m[2]!)) compiler += n;
  }
  return { total, compiler };
}
