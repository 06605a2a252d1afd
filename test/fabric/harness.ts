/**
 * Several NATS fabrics in one process, over a `MemoryHub` and one `ManualClock`: the fabric's
 * state machines run in milliseconds, without NATS, and time moves only when a test says so.
 */
import { Encoding } from "../../src/core/encoding.js";
import type { FabricHost, QueryableInfo, RemoteQueryOptions } from "../../src/core/fabric.js";
import type { Reply } from "../../src/core/reply.js";
import { makeSample, type Sample } from "../../src/core/sample.js";
import type { Selector } from "../../src/core/selector.js";
import { Timestamp } from "../../src/core/timestamp.js";
import type { ManualClock } from "../../src/fabric/clock.js";
import type { KeyExprLimits } from "../../src/keyexpr/index.js";
import { type MemoryHub, MemoryTransport } from "../../src/fabric/memory-transport.js";
import { NatsFabric, type NatsFabricOptions } from "../../src/fabric/nats-fabric.js";

/** Short timings, as a test would configure them. */
export const TIMINGS = {
  heartbeatMs: 100,
  peerTimeoutMs: 400,
  ackTimeoutMs: 600,
  probeAfterMs: 50,
  helloWaitMs: 200,
} as const;

/** Lets queued messages (microtasks) and acknowledgement batches (setImmediate) through. */
export async function settle(rounds = 4): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}

/** A router as the fabric sees it: declarations set by the test, samples recorded. */
export class FakeRouter {
  subs: string[] = [];
  qbls: QueryableInfo[] = [];
  tokens: string[] = [];
  readonly delivered: Sample[] = [];
  /** What `remoteDeclarationsChanged` reported, as `zid kind +added -removed`. */
  readonly declarationChanges: string[] = [];
  /** Replaces delivery (to fail it, or hold it). */
  deliver: ((s: Sample) => Promise<void>) | undefined;
  /** Answers remote queries (default: none). */
  answer: ((selector: Selector, onReply: (r: Reply) => void, options: RemoteQueryOptions) => Promise<void>) | undefined;
  /** Reads remote default queries synchronously (`FabricHost.readRemote`; default: never). */
  read: ((key: string) => Reply[] | undefined) | undefined;
  /** How many remote queries went to `answerRemote`. */
  answered = 0;
  transport: MemoryTransport | undefined;
  /** The router's key-expression limits, as its host gives them (default: none given). */
  keyExprLimits: KeyExprLimits | undefined;
  readonly fabric: NatsFabric;

  constructor(
    readonly zid: string,
    readonly hub: MemoryHub,
    readonly clock: ManualClock,
    options: Partial<NatsFabricOptions> = {},
  ) {
    this.fabric = new NatsFabric({
      servers: [],
      ...TIMINGS,
      ...options,
      clock,
      transport: async () => (this.transport = hub.connect(zid)),
    });
  }

  host(): FabricHost {
    return {
      zid: this.zid,
      ...(this.keyExprLimits && { keyExprLimits: this.keyExprLimits }),
      deliverRemote: async (s) => {
        if (this.deliver) return this.deliver(s);
        this.delivered.push(s);
      },
      answerRemote: async (selector, _ms, onReply, options = {}) => {
        this.answered++;
        await this.answer?.(selector, onReply, options);
      },
      readRemote: (key) => this.read?.(key),
      subscriberKeys: () => [...this.subs],
      queryables: () => [...this.qbls],
      livelinessTokens: () => [...this.tokens],
      remoteDeclarationsChanged: (c) => {
        this.declarationChanges.push(
          `${c.zid} ${c.kind} ${[...c.added.map((k) => `+${k}`), ...c.removed.map((k) => `-${k}`)].join(" ")}`,
        );
      },
    };
  }

  /** Starts the fabric, moving the clock while it waits for hello answers. */
  async start(): Promise<void> {
    let done = false;
    const started = this.fabric.start(this.host()).then(() => {
      done = true;
    });
    for (let i = 0; i < 50 && !done; i++) {
      await settle();
      if (!done) this.clock.advance(50);
    }
    await started;
  }

  /** Changes declarations and lets them reach the others. */
  async declare(changes: { subs?: string[]; qbls?: QueryableInfo[]; tokens?: string[] }): Promise<void> {
    if (changes.subs) this.subs = changes.subs;
    if (changes.qbls) this.qbls = changes.qbls;
    if (changes.tokens) this.tokens = changes.tokens;
    this.fabric.declarationsChanged();
    await settle();
  }

  detail(): Record<string, unknown> {
    return this.fabric.status().detail ?? {};
  }
}

/** Starts routers with the given ids and declarations, and lets them meet. */
export async function cluster(
  hub: MemoryHub,
  clock: ManualClock,
  specs: Array<{ zid: string; subs?: string[]; qbls?: QueryableInfo[]; options?: Partial<NatsFabricOptions> }>,
): Promise<FakeRouter[]> {
  const routers = specs.map((s) => {
    const r = new FakeRouter(s.zid, hub, clock, s.options);
    r.subs = s.subs ?? [];
    r.qbls = s.qbls ?? [];
    return r;
  });
  for (const r of routers) await r.start();
  await settle();
  return routers;
}

let hlcTime = 0x1000_0000_0000_0000n;

/** A text sample with a fresh timestamp. */
export function sample(key: string, value = "v", kind: "put" | "delete" = "put"): Sample {
  return makeSample(key, kind, value, Encoding.TEXT_PLAIN, new Timestamp(hlcTime++, "AA"));
}

/** Tracks a promise's outcome without awaiting it. */
export function track<T>(p: Promise<T>): { state: "pending" | "resolved" | "rejected"; error?: unknown } {
  const t: { state: "pending" | "resolved" | "rejected"; error?: unknown } = { state: "pending" };
  p.then(
    () => {
      t.state = "resolved";
    },
    (err: unknown) => {
      t.state = "rejected";
      t.error = err;
    },
  );
  return t;
}

export { MemoryTransport };
