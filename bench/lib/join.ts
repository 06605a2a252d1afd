/**
 * Shared parts of the join benchmarks (bench/suites/join-*.ts, docs/zenoh-network.md): zenoh's
 * own router (the zenoh-rust runtime of the `eclipse-zenoh` wheel, test/zenoh/join/router.py) and
 * a zest child joined to it with `-e`, inside the loopback-only namespace the zenoh benchmarks run
 * in (bench/lib/zenoh.ts).
 */
import { startZenohRouter } from "../../test/zenoh/join/python.js";
import { freePorts } from "../../test/support/nats-cluster.js";
import { pythonSkip } from "../../test/support/zenoh-python.js";
import { spawnZenohZest, type ZenohZest } from "./zenoh.js";

/** zenoh's router and a zest child joined to it. */
export interface JoinedPair {
  /** `tcp/127.0.0.1:<port>` of zenoh's router. */
  readonly routerLocator: string;
  readonly routerPort: number;
  readonly zest: ZenohZest;
  stop(): Promise<void>;
}

/** Starts zenoh's router, then a zest child joined to it; resolves once the session is open. */
export async function startJoinedPair(extraZestArgs: string[] = []): Promise<JoinedPair> {
  const skip = pythonSkip();
  if (skip) throw new Error(skip);
  const [routerPort] = await freePorts(1);
  const routerLocator = `tcp/127.0.0.1:${routerPort}`;
  const router = await startZenohRouter(routerPort!);
  let zest: ZenohZest | undefined;
  try {
    zest = await spawnZenohZest("zest", ["-e", routerLocator, ...extraZestArgs]);
    const deadline = performance.now() + 15_000;
    for (;;) {
      const r = await fetch(`${zest.url}/@/router/local/status/plugins/zenoh/status`);
      const [entry] = (await r.json()) as Array<{ value: { connect?: { state?: string } } }>;
      if (entry?.value.connect?.state === "open") break;
      if (performance.now() > deadline) throw new Error("zest did not join zenoh's router within 15 s");
      await new Promise((res) => setTimeout(res, 100));
    }
  } catch (err) {
    await zest?.stop();
    await router.stop();
    throw err;
  }
  const z = zest;
  return {
    routerLocator,
    routerPort: routerPort!,
    zest: z,
    stop: async () => {
      await z.stop();
      await router.stop();
    },
  };
}
