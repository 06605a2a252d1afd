/**
 * Summarizes a V8 .cpuprofile (from `BENCH_CPU_PROF=1 npm run bench -- get`): the functions with
 * the most self time, and the zest functions (dist/) with the most inclusive time.
 * Usage: node --import tsx bench/prof.ts <file.cpuprofile> [top=25]
 *
 * Percentages are of the time spent outside `writev`/`writeBuffer`/`writeUtf8String` (socket
 * syscalls, whose share the sampler overstates; read kernel time from the `SysUsPerReq` figures
 * instead), idle and the profiler itself: that is, of the JavaScript and runtime work.
 */
import { readFileSync } from "node:fs";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

process.stdout.on("error", () => process.exit(0)); // piped into head
const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error("usage: node --import tsx bench/prof.ts <file.cpuprofile> [top]");
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;

const byId = new Map<number, ProfileNode>();
for (const n of profile.nodes) byId.set(n.id, n);
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// Self time per node, in microseconds.
const self = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!;
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const EXCLUDED = new Set(["(idle)", "(program)", "writev", "writeBuffer", "writeUtf8String", "writeLatin1String"]);
const excluded = profile.nodes
  .filter((n) => EXCLUDED.has(n.callFrame.functionName) && !n.callFrame.url)
  .reduce((s, n) => s + (self.get(n.id) ?? 0), 0);
const syscalls = profile.nodes
  .filter((n) => n.callFrame.functionName.startsWith("write") && !n.callFrame.url)
  .reduce((s, n) => s + (self.get(n.id) ?? 0), 0);
const busy = total - excluded;

function label(f: CallFrame): string {
  const where = f.url
    ? `${f.url.replace(/^.*\/(dist|node_modules)\//, "$1/").replace(/^node:/, "node:")}:${f.lineNumber + 1}`
    : "";
  return `${f.functionName || "(anonymous)"} ${where}`.trim();
}

// Self time aggregated by function.
const selfByFn = new Map<string, number>();
for (const [id, us] of self) {
  const key = label(byId.get(id)!.callFrame);
  selfByFn.set(key, (selfByFn.get(key) ?? 0) + us);
}

// Inclusive time by function: each sample counts once for every distinct function on its stack.
const inclByFn = new Map<string, number>();
for (const [id, us] of self) {
  if (EXCLUDED.has(byId.get(id)!.callFrame.functionName) && !byId.get(id)!.callFrame.url) continue;
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const key = label(byId.get(cur)!.callFrame);
    if (seen.has(key)) continue;
    seen.add(key);
    inclByFn.set(key, (inclByFn.get(key) ?? 0) + us);
  }
}

const pct = (us: number): string => `${((100 * us) / busy).toFixed(1).padStart(5)}%`;
console.log(
  `profile ${file}: ${(total / 1e6).toFixed(1)} s sampled, ${(syscalls / 1e6).toFixed(1)} s in socket writes, ${(busy / 1e6).toFixed(1)} s of JS and runtime work (the 100% below)\n`,
);
console.log(`top ${top} by self time:`);
for (const [k, us] of [...selfByFn]
  .filter(([k]) => !EXCLUDED.has(k))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top))
  console.log(`  ${pct(us)}  ${k}`);
console.log(`\ntop ${top} zest functions (dist/) by inclusive time:`);
for (const [k, us] of [...inclByFn]
  .filter(([k]) => k.includes(process.env.PROF_FILTER ?? "dist/"))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top))
  console.log(`  ${pct(us)}  ${k}`);
