/**
 * One key space across zest's doors with the real zenoh-pico programs, inside a loopback-only
 * network namespace: attachments, queriers, zenoh-ts (the remote API) ↔ pico both ways, and
 * two routers over a real NATS cluster with a pico client on each.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Sample as ZSample, Session as ZSession } from "@eclipse-zenoh/zenoh-ts";
import type { Zest } from "../../src/runtime.js";
import { openClient, startRemoteRouter } from "../remote/helpers.js";
import { startNatsCluster, type NatsCluster } from "../support/nats-cluster.js";
import { picoSkip, picoPut, runPico } from "../support/pico.js";
import { startZest, type ZestProcess } from "../support/zest-process.js";
import { untilPasses } from "../support/assert.js";

const skip = picoSkip("z_put", "z_sub", "z_get", "z_queryable", "z_pub_attachment", "z_sub_attachment", "z_querier");

describe("pico and zenoh-ts on one router", { skip }, () => {
  let zest: Zest & { locator: string };
  let ep: string;
  let ts: ZSession;

  before(async () => {
    zest = await startRemoteRouter({ listen: { endpoints: ["tcp/127.0.0.1:0"] } });
    ep = zest.zenohLocators[0]!;
    ts = await openClient(zest.locator);
  });
  after(async () => {
    await ts?.close();
    await zest?.close();
  });

  test("z_pub_attachment's attachment and encoding reach z_sub_attachment", async () => {
    const sub = runPico("z_sub_attachment", ["-e", ep, "-k", "demo/att/**"]);
    try {
      await sub.waitFor(/Press CTRL-C to quit/);
      const pub = runPico("z_pub_attachment", ["-e", ep, "-k", "demo/att/x", "-n", "3"]);
      try {
        await sub.waitFor(/Received \('demo\/att\/x': '\[\s*\d+\] Pub from Pico!'\)/, 10_000);
        await sub.waitFor(/with encoding: zenoh\/string;utf8/);
        await sub.waitFor(/0: source, C/);
        await sub.waitFor(/1: index, \d+/);
        // Stamped by the router on the way.
        await sub.waitFor(/with timestamp: \d+/);
      } finally {
        await pub.stop();
      }
    } finally {
      await sub.stop();
    }
  });

  test("z_querier reads a storage, and learns that a queryable matches", async () => {
    await zest.session.put("demo/querier/a", "stored for the querier");
    const q = runPico("z_querier", ["-e", ep, "-s", "demo/querier/**", "-n", "3", "-a"]);
    try {
      await q.waitFor(/Querier has matching queryable\./, 10_000);
      await q.waitFor(/>> Received \('demo\/querier\/a': 'stored for the querier'\)/, 10_000);
    } finally {
      await q.stop();
    }
  });

  test("a pico put reaches a zenoh-ts subscriber", async () => {
    const got: string[] = [];
    const sub = await ts.declareSubscriber("demo/ts/**", {
      handler: (s: ZSample) => {
        got.push(`${s.keyexpr().toString()}=${s.payload().toString()}`);
      },
    });
    try {
      await untilPasses(async () => {
        await picoPut(["-e", ep, "-k", "demo/ts/from-pico", "-v", "hi ts"]);
        assert.ok(got.includes("demo/ts/from-pico=hi ts"), got.join(","));
      });
    } finally {
      await sub.undeclare();
    }
  });

  test("a zenoh-ts put reaches z_sub, and a pico queryable answers a zenoh-ts get", async () => {
    const sub = runPico("z_sub", ["-e", ep, "-k", "demo/pico/**"]);
    const qbl = runPico("z_queryable", ["-e", ep, "-k", "demo/pico/q", "-v", "pico for ts"]);
    try {
      await sub.waitFor(/Press CTRL-C to quit/);
      await qbl.waitFor(/Press CTRL-C to quit/);
      await untilPasses(async () => {
        await ts.put("demo/pico/from-ts", "hi pico");
        await sub.waitFor(/Received \('demo\/pico\/from-ts': 'hi pico'\)/, 500);
      });
      await untilPasses(async () => {
        const replies: string[] = [];
        const receiver = await ts.get("demo/pico/q");
        for await (const r of receiver!) {
          const r2 = r.result();
          if ("payload" in r2 && typeof (r2 as ZSample).keyexpr === "function")
            replies.push((r2 as ZSample).payload().toString());
        }
        assert.ok(replies.includes("pico for ts"), replies.join(","));
      });
    } finally {
      await sub.stop();
      await qbl.stop();
    }
  });
});

describe("two routers over a NATS cluster with a pico client on each", { skip }, () => {
  let cluster: NatsCluster;
  let a: ZestProcess;
  let b: ZestProcess;
  const locator = (z: ZestProcess): string => /zenoh (tcp\/\S+)/.exec(z.stderr())![1]!;

  before(async () => {
    cluster = await startNatsCluster({ size: 1 });
    const noStorage = ["--cfg", "plugins/storage_manager:{storages:{}}"];
    a = await startZest(["--nats", cluster.urls[0]!, "-l", "tcp/127.0.0.1:0", ...noStorage]);
    b = await startZest(["--nats", cluster.urls[0]!, "-l", "tcp/127.0.0.1:0", ...noStorage]);
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await cluster?.stop();
  });

  test("a pico put on one router reaches a pico subscriber on the other; a pico get reaches a pico queryable there", async () => {
    const sub = runPico("z_sub", ["-e", locator(b), "-k", "mesh/**"]);
    const qbl = runPico("z_queryable", ["-e", locator(a), "-k", "mesh/q", "-v", "from A"]);
    try {
      await sub.waitFor(/Press CTRL-C to quit/);
      await qbl.waitFor(/Press CTRL-C to quit/);
      await untilPasses(async () => {
        await picoPut(["-e", locator(a), "-k", "mesh/x", "-v", "across"]);
        await sub.waitFor(/Received \('mesh\/x': 'across'\)/, 1000);
      }, 20_000);
      await untilPasses(async () => {
        const get = runPico("z_get", ["-e", locator(b), "-k", "mesh/q"]);
        try {
          await get.waitFor(/>> Received PUT \('mesh\/q': 'from A'\)/, 3000);
        } finally {
          await get.stop();
        }
      }, 20_000);
    } finally {
      await sub.stop();
      await qbl.stop();
    }
  });
});
