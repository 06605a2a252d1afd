/**
 * Every benchmark `npm run bench` knows, in the order a full run takes them. Adding one: write
 * `suites/<name>.ts` exporting `run(): Promise<BenchResult>`, then add a line here.
 */
import type { BenchModule } from "./lib/types.js";

export interface BenchEntry {
  /** Short name used on the command line: `npm run bench -- get put`. */
  name: string;
  /** Human title, used in the printed line and the Markdown table. */
  title: string;
  /** The issue whose benchmark table this implements. */
  issue: number;
  load: () => Promise<BenchModule>;
}

export const BENCHMARKS: BenchEntry[] = [
  { name: "get", title: "GET one key", issue: 2, load: () => import("./suites/get.js") },
  { name: "put", title: "PUT 100 bytes", issue: 2, load: () => import("./suites/put.js") },
  { name: "get-wild", title: "GET demo/** over 1,000 keys", issue: 2, load: () => import("./suites/get-wild.js") },
  { name: "routing", title: "Routing one put, 100,000 vs 10 subscriptions", issue: 2, load: () => import("./suites/routing.js") },
  { name: "sse", title: "SSE fan-out, 1,000 subscribers, 50 puts/s for 20 s", issue: 2, load: () => import("./suites/sse.js") },
  { name: "memory", title: "Memory, 1,000,000 keys of 100 bytes", issue: 2, load: () => import("./suites/memory.js") },
];
