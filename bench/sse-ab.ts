/**
 * SSE delivery of several zest builds side by side (and the bare relay floor), in alternating
 * rounds (bench/lib/rest-sse-rounds.ts): to tell two builds apart on a noisy host, where one
 * run each would not. Not part of `npm run bench`.
 *
 * Usage (each build's `dist/` with its node_modules reachable):
 *   node --import tsx bench/sse-ab.ts [--floor] [--rounds=7] <cli.js> [NAME=value:<cli.js>] ...
 * `NAME=value:` runs that build with one environment variable set.
 */
import { type ServerProcess, spawnBaseline, spawnServer } from "./lib/proc.js";
import { sseRounds } from "./lib/rest-sse-rounds.js";

const args = process.argv.slice(2);
const floor = args.includes("--floor");
const rounds = Number(args.find((a) => a.startsWith("--rounds="))?.slice(9) ?? 7);
const builds = args.filter((a) => !a.startsWith("--"));
if (builds.length === 0 || !Number.isSafeInteger(rounds) || rounds < 1) {
  console.error("usage: bench/sse-ab.ts [--floor] [--rounds=7] <cli.js> [NAME=value:<cli.js>] ...");
  process.exit(2);
}
const started: ServerProcess[] = [];
const ms = (x: number): string => x.toFixed(2);
try {
  for (const [i, spec] of builds.entries()) {
    const at = spec.indexOf(":");
    const pair = at > 0 ? spec.slice(0, at).split("=") : [];
    const env = pair.length === 2 ? { [pair[0]!]: pair[1]! } : {};
    const cli = pair.length === 2 ? spec.slice(at + 1) : spec;
    started.push(await spawnServer(`build ${i}`, cli, ["--rest-http-port", "127.0.0.1:0"], { timeoutMs: 60_000, env }));
  }
  if (floor) started.push(await spawnBaseline("sse-relay.mjs", [], "relay"));
  const opts = { rate: 200, puts: 1_000, warmupPuts: 200, roundWarmupPuts: 50, rounds, drainMs: 10_000 };
  const results = await sseRounds(started, opts);
  for (const [i, r] of results.entries()) {
    const what = i < builds.length ? builds[i] : "bare node:http relay";
    const list = (f: (x: (typeof r.rounds)[number]) => number): string => r.rounds.map((x) => ms(f(x))).join(" ");
    console.log(
      `${what}: p50 ${ms(r.p50)} ms [${list((x) => x.p50)}], p99 ${ms(r.p99)} ms [${list((x) => x.p99)}], pooled p99 ${ms(r.pooledP99)} ms, server ${r.serverCpuPct.toFixed(1)}% of a core, others ${r.otherCpuPct.toFixed(0)}%, lost ${r.lost}`,
    );
  }
} finally {
  await Promise.all(started.map((s) => s.stop()));
}
