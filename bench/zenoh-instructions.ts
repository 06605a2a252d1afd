/**
 * The zenoh door's cost per routed message, counted rather than timed (bench/zenoh.md, "Cost per
 * message"): instructions under valgrind (callgrind), as bench/instructions.ts counts them per
 * REST request, or the CPU time zest used. Wall-clock throughput on a shared 2-core host is
 * noise; the instruction count of the same build repeats to 1-2%.
 *
 * Usage (`npm run build` done; valgrind installed for `instructions`):
 *   node --import tsx bench/zenoh-instructions.ts [instructions|cpu] [warm=200000] [count=100000] [perBatch=64] [-- <zest args>]
 *
 * zest runs from dist/cli.js with REST on a free port and the zenoh door on another, with its
 * default configuration (a memory storage on `**`, so every put is stored as well as routed).
 * Two lean clients (bench/lib/zenoh-client.ts) open sessions: a subscriber on `bench/thr`, and a
 * publisher that declares `bench/thr` as key-expression id 1 and sends reliable FRAMEs of
 * `perBatch` PUSHes of 8 bytes on that id, as `z_pub_thr -s 8` does. At most `WINDOW` messages
 * are in flight (sent, not yet received), so zest never drops one for a slow reader and the count
 * is exact. Counting starts when the subscriber has received `warm` messages and stops at
 * `warm + count`; the figure is the instructions (or CPU-µs) of the zest process per message.
 * Optimizing compilation runs on the main thread (`--no-concurrent-recompilation`) and what V8's
 * compiler spends in the window is shown apart, as in bench/instructions.ts.
 * `BENCH_CPU_PROF=<dir>` (cpu mode) writes a .cpuprofile of zest there.
 * `INSTRUCTIONS_DUMP=<file>` keeps the callgrind dump, for `callgrind_annotate`.
 */
import { Buffer } from "node:buffer";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePorts } from "../test/support/nats-cluster.js";
import { callgrindTotals, callgrindWrapper } from "./lib/callgrind.js";
import { parseMessageCountArgs } from "./lib/message-count-args.js";
import { type MessageCountRun, measureMessages } from "./lib/message-count-run.js";
import { DEFAULT_QOS_BYTE } from "../src/zenoh/codec/core.js";
import { LeanZenohClient } from "./lib/zenoh-client.js";
import { CLI, type ServerProcess, spawnServer } from "./lib/proc.js";

/** The PUSHes' QoS byte: `ZENOH_INSTRUCTIONS_QOS=13` sends congestion control BLOCK, as zenoh-python's publisher in bench/workers does. */
const QOS = Number(process.env.ZENOH_INSTRUCTIONS_QOS ?? DEFAULT_QOS_BYTE);
if (!Number.isInteger(QOS) || QOS < 0 || QOS > 0x1f)
  throw new Error(`ZENOH_INSTRUCTIONS_QOS: a QoS byte (0-31), not ${QOS}`);

/** Messages sent but not yet received, at most. */
const WINDOW = 16_384;
const KEY = "bench/thr";

const args = parseMessageCountArgs(
  process.argv.slice(2),
  "usage: bench/zenoh-instructions.ts [instructions|cpu] [warm=200000] [count=100000] [perBatch=64] [-- <zest args>]",
  { warm: 200_000, count: 100_000, perBatch: 64 },
);
const { mode, count, perBatch, zestArgs } = args;

const dir = mkdtempSync(join(tmpdir(), "zest-zenoh-instructions-"));
let server: ServerProcess | undefined;
const clients: LeanZenohClient[] = [];
try {
  const [port] = await freePorts(1);
  server = await spawnServer(
    "zest",
    CLI,
    ["--rest-http-port", "127.0.0.1:0", "-l", `tcp/127.0.0.1:${port}`, "--no-multicast-scouting", ...zestArgs],
    {
      nodeArgs: [
        "--no-concurrent-recompilation",
        // A CPU profile of zest, to see where the cost goes (`cpu` mode: valgrind would distort it).
        ...(process.env.BENCH_CPU_PROF && mode === "cpu"
          ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_CPU_PROF]
          : []),
      ],
      ...(mode === "instructions"
        ? {
            wrapper: callgrindWrapper(dir),
          }
        : {}),
      timeoutMs: 180_000,
    },
  );
  const sub = await LeanZenohClient.connect("127.0.0.1", port!);
  const pub = await LeanZenohClient.connect("127.0.0.1", port!);
  clients.push(sub, pub);
  const { cpu, wallMs } = await measure(server, sub, pub);
  if (mode === "instructions") {
    const { total, compiler } = callgrindTotals(server.pid, dir);
    const per = (n: number): string => Math.round(n / count).toLocaleString("en-US");
    console.log(`zenoh PUSH routed, ${perBatch} per FRAME, QoS byte ${QOS}, 1 subscriber, default storage`);
    console.log(
      `  instructions per message: ${per(total - compiler)} (V8's compiler meanwhile: ${per(compiler)}; all: ${per(total)})`,
    );
  } else {
    console.log(`zenoh PUSH routed, ${perBatch} per FRAME, QoS byte ${QOS}, 1 subscriber, default storage`);
    console.log(
      `  CPU per message: ${((cpu * 1e6) / count).toFixed(3)} µs (${Math.round(count / cpu).toLocaleString("en-US")} msg per CPU-second; ${Math.round((count * 1000) / wallMs).toLocaleString("en-US")} msg/s wall)`,
    );
  }
} finally {
  for (const c of clients) c.close();
  await server?.stop(1_000);
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Declares the subscriber and the publisher's key-expression id, then publishes until the
 * subscriber has received `warm + count` messages, counting (or reading zest's CPU time) over the
 * last `count`. Resolves with zest's CPU seconds and the wall time of the counted window.
 */
async function measure(zest: ServerProcess, sub: LeanZenohClient, pub: LeanZenohClient): Promise<MessageCountRun> {
  sub.declare({ kind: "subscriber", id: 1, key: { scope: 0, suffix: KEY, senderMapping: false } });
  pub.declare({ kind: "keyexpr", id: 1, key: { scope: 0, suffix: KEY, senderMapping: false } });
  // The subscriber's declaration reaches the router before the first put (another connection).
  await new Promise((r) => setTimeout(r, mode === "instructions" ? 2_000 : 200));
  const key = { scope: 1, suffix: "", senderMapping: true };
  const payload = Buffer.alloc(8, 0x61);
  return await measureMessages(zest.pid, args, {
    send: (n) => pub.putBatch(key, payload, n, QOS),
    socket: pub.socket,
    onReceived: (received) => sub.countPushes(received),
    window: WINDOW,
    what: "messages",
  });
}
