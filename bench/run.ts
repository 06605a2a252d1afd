/**
 * `npm run bench [-- name...]`: runs the benchmarks (all, or the named ones) one after another,
 * prints one line each, and writes bench/results/latest.json and latest.md (with the Markdown
 * tables of benchmarks that return some, e.g. `growth`).
 *
 * Before each benchmark it waits (up to BENCH_QUIET_WAIT seconds, 20 by default) for other
 * processes on the machine to stop using CPU; a benchmark that still ran alongside them says so.
 *
 * Environment: BENCH_CPU_PROF=1 profiles the servers (zest and baselines) into bench/results/prof/.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { BENCHMARKS, type BenchEntry } from "./benchmarks.js";
import { fmtRatio, roundFigure } from "./lib/format.js";
import { setTimeout as sleep } from "node:timers/promises";
import { BENCH_DIR, distStaleness, INTERFERENCE_LIMIT_PCT, killAllChildren, startInterference } from "./lib/proc.js";
import type { BenchResult } from "./lib/types.js";

interface Row extends BenchResult {
  title: string;
  issue: number;
  seconds: number;
  error?: string;
}

function select(args: string[]): BenchEntry[] {
  const names = args.filter((a) => !a.startsWith("-"));
  if (names.length === 0) return BENCHMARKS;
  const unknown = names.filter((n) => !BENCHMARKS.some((b) => b.name === n));
  if (unknown.length > 0) {
    console.error(`unknown benchmark(s): ${unknown.join(", ")} (known: ${BENCHMARKS.map((b) => b.name).join(", ")})`);
    process.exit(2);
  }
  return BENCHMARKS.filter((b) => names.includes(b.name));
}

/** Waits until other processes use less than the interference limit; returns a note if they never did. */
async function waitForQuiet(maxSeconds: number): Promise<string | undefined> {
  const until = performance.now() + maxSeconds * 1000;
  let said = false;
  for (;;) {
    const probe = startInterference([]);
    await sleep(1000);
    const { otherCpuPct } = probe();
    if (otherCpuPct < INTERFERENCE_LIMIT_PCT) return undefined;
    if (performance.now() >= until)
      return `other processes were using ${Math.round(otherCpuPct)}% of a core when it started`;
    if (!said) {
      console.error(
        `  (other processes use ${Math.round(otherCpuPct)}% of a core: waiting up to ${maxSeconds} s for a quiet machine)`,
      );
      said = true;
    }
  }
}

/** True when neighbours took enough CPU during the measurement to void its pass/miss. */
function unreliable(r: BenchResult): boolean {
  return (r.interferencePct ?? 0) > INTERFERENCE_LIMIT_PCT;
}

function line(r: Row): string {
  if (r.error) return `${r.title}: FAILED: ${r.error}`;
  let s = `${r.title}: ${r.summary ?? ""}`;
  if (r.ratio !== undefined) s += ` = ${fmtRatio(r.ratio)}`;
  if (r.target) s += ` (target ${r.target})`;
  if (r.pass !== undefined) s += r.pass ? " PASS" : " MISS";
  if (unreliable(r)) s += ` (UNRELIABLE: other processes took ${Math.round(r.interferencePct!)}% of a core)`;
  return s;
}

function markdown(rows: Row[], meta: Record<string, string>): string {
  const esc = (s: string): string => s.replace(/\|/g, "\\|");
  const out = [
    `Benchmarks (\`npm run bench\`), ${meta.date}, ${meta.node}, ${meta.cpus}. Servers run in child processes; autocannon runs in the bench process.`,
    "",
    "| benchmark | figures | ratio | target | result |",
    "|---|---|---|---|---|",
  ];
  for (const r of rows) {
    let result = r.error ? "failed" : r.pass === undefined ? "reported" : r.pass ? "pass" : "**miss**";
    if (!r.error && unreliable(r)) result += " (unreliable: machine busy)";
    out.push(
      `| ${esc(r.title)} | ${esc(r.error ?? r.summary ?? "")} | ${r.ratio !== undefined ? fmtRatio(r.ratio) : "—"} | ${esc(r.target ?? "—")} | ${result} |`,
    );
  }
  const notes = rows.flatMap((r) => (r.notes ?? []).map((n) => `- ${r.title}: ${n}`));
  if (notes.length > 0) out.push("", ...notes);
  for (const r of rows) if (r.markdown && !r.error) out.push("", `### ${r.title}`, "", r.markdown.trimEnd());
  return `${out.join("\n")}\n`;
}

async function main(): Promise<void> {
  const chosen = select(process.argv.slice(2));
  const stale = distStaleness();
  if (stale) console.error(`warning: ${stale}`);
  const rows: Row[] = [];
  const t0 = performance.now();
  for (const b of chosen) {
    const busy = await waitForQuiet(Number(process.env.BENCH_QUIET_WAIT ?? 20));
    const started = performance.now();
    let row: Row;
    try {
      const mod = await b.load();
      const r = await mod.run();
      row = { ...r, title: b.title, issue: b.issue, seconds: (performance.now() - started) / 1000 };
    } catch (err) {
      row = {
        name: b.name,
        figures: {},
        title: b.title,
        issue: b.issue,
        seconds: (performance.now() - started) / 1000,
        error: err instanceof Error ? err.message : String(err),
      };
    }
    if (busy) row.notes = [...(row.notes ?? []), busy];
    rows.push(row);
    console.log(line(row));
    for (const n of row.notes ?? []) console.log(`  note: ${n}`);
  }
  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: `${os.cpus().length} x ${os.cpus()[0]?.model.trim() ?? "cpu"}`,
    seconds: ((performance.now() - t0) / 1000).toFixed(1),
  };
  // `markdown` is left out of the JSON: it is made of the figures already there.
  const results = rows.map(({ markdown: _markdown, ...r }) => ({
    ...r,
    ratio: r.ratio === undefined ? undefined : roundFigure(r.ratio),
    interferencePct: r.interferencePct === undefined ? undefined : roundFigure(r.interferencePct),
    seconds: roundFigure(r.seconds),
    figures: Object.fromEntries(Object.entries(r.figures).map(([k, v]) => [k, roundFigure(v)])),
  }));
  const dir = join(BENCH_DIR, "results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "latest.json"), `${JSON.stringify({ ...meta, results }, null, 2)}\n`);
  writeFileSync(join(dir, "latest.md"), markdown(rows, meta));
  console.log(`${rows.length} benchmark(s) in ${meta.seconds} s; results in bench/results/latest.{json,md}`);
  if (rows.some((r) => r.error)) process.exitCode = 1;
}

for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => {
    killAllChildren();
    process.exit(130);
  });
}

await main();
