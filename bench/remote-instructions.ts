/**
 * The remote API door's cost per put, counted rather than timed, as bench/zenoh-instructions.ts
 * counts the zenoh door's cost per routed message: instructions of the zest process under
 * valgrind (callgrind), or the CPU time it used. The same build repeats to 1-2%, where
 * wall-clock throughput on a shared 2-core host moves by ±15%.
 *
 * Usage (`npm run build` done; valgrind installed for `instructions`):
 *   node --import tsx bench/remote-instructions.ts [instructions|cpu] [warm=100000] [count=50000] [perBatch=64] [-- <zest args>]
 *
 * zest runs from dist/cli.js with REST on a free port and the remote API on another, with its
 * default configuration (a memory storage on `**`, so every put is stored as well as routed). Two
 * bare WebSocket clients (bench/lib/raw-ws.ts) connect: one declares a subscriber on `bench/thr`,
 * the other sends `Put` messages of 8 bytes to `bench/thr`, `perBatch` frames per socket write, as
 * zenoh-ts's `session.put` encodes them. At most `WINDOW` puts are in flight (sent, not yet
 * delivered), so the count is exact. Counting starts when the subscriber has received `warm`
 * samples and stops at `warm + count`; the figure is zest's instructions (or CPU-µs) per put.
 * `INSTRUCTIONS_DUMP=<file>` keeps the callgrind dump, for `callgrind_annotate`.
 */
import { Buffer } from "node:buffer";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { In, SEQ_FLAG } from "../src/remote/protocol.js";
import { Writer } from "../src/remote/wire.js";
import { freePorts } from "../test/support/nats-cluster.js";
import { callgrindTotals, callgrindWrapper } from "./lib/callgrind.js";
import { parseMessageCountArgs } from "./lib/message-count-args.js";
import { type MessageCountRun, measureMessages } from "./lib/message-count-run.js";
import { CLI, type ServerProcess, spawnServer } from "./lib/proc.js";
import { connectRawWs, type RawWs } from "./lib/raw-ws.js";

/** Puts sent but not yet delivered, at most. */
const WINDOW = 4_096;
const KEY = "bench/thr";

const args = parseMessageCountArgs(
  process.argv.slice(2),
  "usage: bench/remote-instructions.ts [instructions|cpu] [warm=100000] [count=50000] [perBatch=64] [-- <zest args>]",
  { warm: 100_000, count: 50_000, perBatch: 64 },
);
const { mode, count, perBatch, zestArgs } = args;

/** One client → server message, encoded as docs/remote-api.md describes it. */
const message = (f: (w: Writer) => void): Buffer => {
  const w = new Writer();
  f(w);
  return Buffer.from(w.finish());
};
// Declare a subscriber (with a sequence id, so zest answers it), origin "any".
const declareSub = message((w) =>
  w
    .u8(In.DeclareSubscriber | SEQ_FLAG)
    .u32(1)
    .u32(1)
    .string(KEY)
    .u8(2),
);
// A put as zenoh-ts sends it: key, payload, encoding (id 0, no schema), no attachment, no
// timestamp, default QoS.
const put = message((w) =>
  w.u8(In.Put).string(KEY).bytes(Buffer.alloc(8, 0x61)).u16(0).string("").bool(false).bool(false).u8(0xa5),
);

const dir = mkdtempSync(join(tmpdir(), "zest-remote-instructions-"));
let server: ServerProcess | undefined;
const clients: RawWs[] = [];
try {
  const [port] = await freePorts(1);
  server = await spawnServer(
    "zest",
    CLI,
    ["--rest-http-port", "127.0.0.1:0", "--remote-api-port", `127.0.0.1:${port}`, ...zestArgs],
    {
      nodeArgs: ["--no-concurrent-recompilation"],
      ...(mode === "instructions" ? { wrapper: callgrindWrapper(dir) } : {}),
      timeoutMs: 180_000,
    },
  );
  const url = `ws://127.0.0.1:${port}`;
  let onSample: () => void = () => undefined;
  let declared: () => void = () => undefined;
  const answered = new Promise<void>((r) => (declared = r));
  let frames = 0;
  // The first frame the subscriber gets answers its declaration; every later one is a sample.
  const sub = await connectRawWs(url, () => {
    if (frames++ === 0) declared();
    else onSample();
  });
  clients.push(sub);
  sub.send(declareSub);
  await answered;
  const pub = await connectRawWs(url, () => undefined);
  clients.push(pub);
  const { cpu, wallMs } = await measure(server, pub, (f) => (onSample = f));
  const title = `remote API Put routed, ${perBatch} per socket write, 1 subscriber, default storage`;
  console.log(title);
  if (mode === "instructions") {
    const { total, compiler } = callgrindTotals(server.pid, dir);
    const per = (n: number): string => Math.round(n / count).toLocaleString("en-US");
    console.log(
      `  instructions per put: ${per(total - compiler)} (V8's compiler meanwhile: ${per(compiler)}; all: ${per(total)})`,
    );
  } else {
    console.log(
      `  CPU per put: ${((cpu * 1e6) / count).toFixed(3)} µs (${Math.round(count / cpu).toLocaleString("en-US")} puts per CPU-second; ${Math.round((count * 1000) / wallMs).toLocaleString("en-US")} puts/s wall)`,
    );
  }
} finally {
  for (const c of clients) c.close();
  await server?.stop(1_000);
  rmSync(dir, { recursive: true, force: true });
}

/** Publishes batches of the put until the subscriber has received `warm + count` samples (lib/message-count-run.ts). */
function measure(zest: ServerProcess, pub: RawWs, listen: (onSample: () => void) => void): Promise<MessageCountRun> {
  const batch = Array.from({ length: perBatch }, () => put);
  return measureMessages(zest.pid, args, {
    send: (n) => pub.sendAll(n === perBatch ? batch : batch.slice(0, n)),
    socket: pub.socket,
    onReceived: (received) => listen(() => received(1)),
    window: WINDOW,
    what: "samples",
  });
}
