// The zenoh door for the zenoh benchmarks (suites/zenoh.ts), as a plugin loaded by
// `zest -P bench/workers/zenoh-door.mjs`: a ZenohServer on the router's own Router, on the
// endpoint in ZEST_BENCH_ZENOH_LISTEN (default tcp/127.0.0.1:0). No scouting: every benchmark
// client is given the endpoint, and a benchmark outside a namespace must send no multicast.
// It prints `zenoh listening <locator>` on stderr.
//
// The CLI starts the zenoh door itself once the front-door registry has it (`-l`); until then
// this plugin is how the benchmarks reach the door from a real `zest` process with REST beside it.

import { parseEndpoint } from "../../dist/zenoh/endpoint.js";
import { ZenohServer } from "../../dist/zenoh/server.js";

/** @param {{ session: import("../../dist/core/session.js").Session, logger: import("pino").Logger }} ctx */
export default async function zenohDoor({ session, logger }) {
  const endpoint = parseEndpoint(process.env.ZEST_BENCH_ZENOH_LISTEN ?? "tcp/127.0.0.1:0");
  const server = new ZenohServer({ router: session.router, logger, endpoints: [endpoint] });
  await server.listen();
  for (const l of server.locators()) process.stderr.write(`zenoh listening ${l}\n`);
  // A put on `bench/zenoh/gc` settles the heap (node --expose-gc) before the benchmark reads the RSS.
  const gc = session.declareSubscriber("bench/zenoh/gc", () => {
    for (let i = 0; i < 3; i++) globalThis.gc?.();
  });
  return {
    async close() {
      gc.undeclare();
      await server.close();
    },
  };
}
