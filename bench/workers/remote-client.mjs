// zenoh-ts clients for the remote-API benchmarks, in their own process (the client needs
// `node --experimental-wasm-modules --experimental-websocket`). Prints one JSON line.
//   pubsub <locator> <seconds> <window>: one publisher connection, one subscriber connection,
//     at most <window> samples in flight; samples/s and latency.
//   pubsub-split <locator> <seconds> <window>: the same with the subscriber in a child process.
//   fanout <locator> <subscribers> <rate> <seconds>: one publisher at <rate> samples/s on a fixed
//     schedule, <subscribers> subscriber connections, after one uncounted second; latency of every
//     delivery, losses.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Config, open } from "@eclipse-zenoh/zenoh-ts";
import { paced } from "./paced.mjs";

const [mode, locator, ...rest] = process.argv.slice(2);
console.log = console.warn = () => undefined; // the client's connection chatter
const openSession = () => open(new Config(locator, 5000));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

/** Payload: u32 sequence number, f64 send time (performance.now(): one process, one clock), padding to 100 bytes. */
function payload(seq) {
  const b = new Uint8Array(100);
  const v = new DataView(b.buffer);
  v.setUint32(0, seq, true);
  v.setFloat64(4, performance.now(), true);
  return b;
}
function decode(sample) {
  const b = sample.payload().toBytes();
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return [v.getUint32(0, true), v.getFloat64(4, true)];
}

/**
 * Puts with at most `window` samples in flight: `arrived()` is told of what came back (a count,
 * or one more), and `runFor` publishes for `ms`, then waits for every sample it sent.
 */
class Window {
  sent = 0;
  received = 0;
  #wake;

  constructor(pub, window, make) {
    this.pub = pub;
    this.window = window;
    this.make = make;
  }

  arrived(count = this.received + 1) {
    this.received = count;
    this.#wake?.();
  }

  /** Resolves at the next `arrived`. */
  next() {
    return new Promise((r) => (this.#wake = r));
  }

  /**
   * A 1 s warm-up, `started()`, then `seconds` measured: the samples received, the publishing
   * figures, and `wall` seconds.
   */
  async measure(seconds, started) {
    await this.runFor(1000);
    started();
    const cpu0 = process.cpuUsage();
    const r0 = this.received;
    const t0 = performance.now();
    await this.runFor(seconds * 1000);
    const wall = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    return {
      wall,
      figures: {
        samples: this.received - r0,
        samplesPerSec: (this.received - r0) / wall,
        lost: this.sent - this.received,
        clientCpuPct: (100 * (cpu.user + cpu.system)) / 1e6 / wall,
      },
    };
  }

  async runFor(ms) {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      while (this.sent - this.received >= this.window) await this.next();
      await this.pub.put(this.make(this.sent++));
    }
    while (this.received < this.sent) await this.next();
  }
}

async function pubsub(seconds, window) {
  const pubS = await openSession();
  const subS = await openSession();
  let measuring = false;
  const lat = [];
  let w;
  await subS.declareSubscriber("bench/ws/**", {
    handler: (s) => {
      const [, sent] = decode(s);
      if (measuring) lat.push(performance.now() - sent);
      w.arrived();
    },
  });
  w = new Window(await pubS.declarePublisher("bench/ws/k"), window, payload);
  const { figures } = await w.measure(seconds, () => (measuring = true));
  const out = { ...figures, p50Ms: percentile(lat, 0.5), p99Ms: percentile(lat, 0.99) };
  await pubS.close();
  await subS.close();
  return out;
}

/**
 * `pubsub` with the subscriber in a child process of its own, as a publishing application and a
 * subscribing one would run: the publisher keeps at most <window> samples in flight from the
 * counts the child reports over IPC (one message per event-loop turn that received samples).
 * Send times are wall-clock (`timeOrigin + now()`), so both processes read one clock.
 */
async function pubsubSplit(seconds, window) {
  const child = fork(fileURLToPath(import.meta.url), ["sub-child", locator], { execArgv: process.execArgv });
  const w = new Window(undefined, window, wallPayload);
  let report;
  child.on("message", (m) => {
    if (m.received !== undefined) w.arrived(m.received);
    else report?.(m);
  });
  await w.next(); // the child's subscriber is declared (received: 0)
  const pubS = await openSession();
  w.pub = await pubS.declarePublisher("bench/ws/k");
  const { wall, figures } = await w.measure(seconds, () => child.send({ measure: true }));
  const sub = await new Promise((r) => {
    report = r;
    child.send({ done: true });
  });
  await pubS.close();
  return {
    ...figures,
    p50Ms: sub.p50Ms,
    p99Ms: sub.p99Ms,
    subscriberCpuPct: (100 * sub.cpuSeconds) / wall,
    childCpuSeconds: sub.totalCpuSeconds,
  };
}

/** Like `payload`, with the send time on the wall clock shared by every process. */
function wallPayload(seq) {
  const b = new Uint8Array(100);
  const v = new DataView(b.buffer);
  v.setUint32(0, seq, true);
  v.setFloat64(4, performance.timeOrigin + performance.now(), true);
  return b;
}

/** The subscriber process of `pubsubSplit`. */
async function subChild() {
  const subS = await openSession();
  let received = 0;
  let measuring = false;
  let cpu0;
  const lat = [];
  let flushing = false;
  const flush = () => {
    flushing = false;
    process.send({ received });
  };
  await subS.declareSubscriber("bench/ws/**", {
    handler: (s) => {
      const [, sent] = decode(s);
      received++;
      if (measuring) lat.push(performance.timeOrigin + performance.now() - sent);
      if (!flushing) {
        flushing = true;
        setImmediate(flush);
      }
    },
  });
  process.on("message", async (m) => {
    if (m.measure) {
      measuring = true;
      cpu0 = process.cpuUsage();
    } else if (m.done) {
      const cpu = process.cpuUsage(cpu0);
      const total = process.cpuUsage();
      process.send({
        p50Ms: percentile(lat, 0.5),
        p99Ms: percentile(lat, 0.99),
        cpuSeconds: (cpu.user + cpu.system) / 1e6,
        totalCpuSeconds: (total.user + total.system) / 1e6,
      });
      await subS.close();
      process.exit(0);
    }
  });
  process.send({ received: 0 });
}

async function fanout(subscribers, rate, seconds) {
  const pubS = await openSession();
  const sessions = [];
  const total = rate * seconds;
  const lat = new Float64Array(total * subscribers);
  let n = 0;
  const seen = [];
  for (let i = 0; i < subscribers; i++) {
    const s = await openSession();
    sessions.push(s);
    const got = new Uint8Array(total);
    seen.push(got);
    await s.declareSubscriber("bench/fan/**", {
      handler: (sample) => {
        const [seq, sent] = decode(sample);
        if (seq < total) {
          got[seq] = 1;
          if (n < lat.length) lat[n++] = performance.now() - sent;
        }
      },
    });
  }
  const pub = await pubS.declarePublisher("bench/fan/k");
  await sleep(200);
  // A fixed schedule: each 5 ms tick sends the samples due by then (a late tick catches up).
  // One uncounted second first (sequence numbers from `total` on): the router and this client
  // compile the path meanwhile, as in the lean and SSE fan-outs.
  await paced(rate, total, rate, (seq) => pub.put(payload(seq)));
  await sleep(200);
  const cpu0 = process.cpuUsage();
  const start = await paced(total, 0, rate, (seq) => pub.put(payload(seq)));
  const sendWall = (performance.now() - start) / 1000;
  const drainUntil = performance.now() + 5000;
  while (n < lat.length && performance.now() < drainUntil) await sleep(20);
  const cpu = process.cpuUsage(cpu0);
  let lost = 0;
  for (const got of seen) for (const v of got) if (v === 0) lost++;
  const l = lat.subarray(0, n).sort();
  const out = {
    subscribers,
    samples: total,
    rateAchieved: total / sendWall,
    deliveries: n,
    lost,
    p50Ms: l[Math.floor(0.5 * n)] ?? Number.NaN,
    p99Ms: l[Math.min(n - 1, Math.floor(0.99 * n))] ?? Number.NaN,
    maxMs: l[n - 1] ?? Number.NaN,
    clientCpuPct: (100 * (cpu.user + cpu.system)) / 1e6 / ((performance.now() - start) / 1000),
  };
  await pubS.close();
  for (const s of sessions) await s.close();
  return out;
}

if (mode === "sub-child") {
  await subChild();
} else {
  const t0 = process.cpuUsage();
  const out =
    mode === "pubsub"
      ? await pubsub(Number(rest[0]), Number(rest[1]))
      : mode === "pubsub-split"
        ? await pubsubSplit(Number(rest[0]), Number(rest[1]))
        : await fanout(Number(rest[0]), Number(rest[1]), Number(rest[2]));
  const c = process.cpuUsage(t0);
  // A child's CPU counts as the client's, not as interference.
  const cpuSeconds = (c.user + c.system) / 1e6 + (out.childCpuSeconds ?? 0);
  process.stdout.write(`${JSON.stringify({ ...out, cpuSeconds })}\n`);
  process.exit(0);
}
