/**
 * zest's zenoh door against the real zenoh-pico 1.9 programs (test/support/pico.ts), inside a
 * loopback-only network namespace: one key space with REST, storages, evals and the admin space.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { picoSkip, picoPut, runPico } from "../support/pico.js";
import { startZest, type ZestProcess, zenohLocatorOf } from "../support/zest-process.js";
import { untilPasses } from "../support/assert.js";
import { bytesValue, restGet } from "../support/http.js";

const skip = picoSkip("z_put", "z_sub", "z_get", "z_queryable", "z_pub", "z_info", "z_liveliness");

describe("zenoh-pico in client mode against zest", { skip }, () => {
  let zest: ZestProcess;
  let ep: string;

  before(async () => {
    zest = await startZest(["-l", "tcp/127.0.0.1:0"]);
    ep = zenohLocatorOf(zest);
  });
  after(async () => {
    await zest?.stop();
  });

  test("z_put is stored and read by a REST GET, with zenoh's default encoding", async () => {
    await picoPut(["-e", ep, "-k", "demo/pico/put", "-v", "hello from pico"]);
    await untilPasses(async () => {
      const r = await restGet(`${zest.url}/demo/pico/put`);
      assert.equal(r.status, 200);
      const [entry] = r.body as Array<{ key: string; value: unknown; encoding: string; time: string }>;
      assert.equal(entry?.key, "demo/pico/put");
      assert.equal(bytesValue(entry?.value), "hello from pico");
      assert.equal(entry?.encoding, "zenoh/bytes");
      // Stamped by the router: pico sends no timestamp.
      assert.match(entry?.time ?? "", /^\d{4}-\d\d-\d\dT.*\/[0-9A-F]+$/);
    });
  });

  test("a REST PUT reaches z_sub", async () => {
    const sub = runPico("z_sub", ["-e", ep, "-k", "demo/pico/sub/**"]);
    try {
      await sub.waitFor(/Press CTRL-C to quit/);
      await untilPasses(async () => {
        const res = await fetch(`${zest.url}/demo/pico/sub/a`, {
          method: "PUT",
          body: "from REST",
          headers: { "content-type": "text/plain" },
        });
        assert.equal(res.status, 200);
        await sub.waitFor(/Received \('demo\/pico\/sub\/a': 'from REST'\)/, 500);
      });
    } finally {
      await sub.stop();
    }
  });

  test("z_get reads storages and the admin space", async () => {
    await fetch(`${zest.url}/demo/pico/stored`, { method: "PUT", body: "kept" });
    const get = runPico("z_get", ["-e", ep, "-k", "demo/pico/stored"]);
    try {
      await get.waitFor(/>> Received PUT \('demo\/pico\/stored': 'kept'\)/);
      await get.waitFor(/Received query final notification/);
    } finally {
      await get.stop();
    }
    const admin = runPico("z_get", ["-e", ep, "-k", "@/router/*"]);
    try {
      const line = await admin.waitFor(/>> Received PUT \('@\/router\/[0-9A-Fa-f]+'/);
      assert.match(line, /"zid"/);
    } finally {
      await admin.stop();
    }
  });

  test("z_queryable answers a REST GET and a z_get", async () => {
    const q = runPico("z_queryable", ["-e", ep, "-k", "demo/pico/q", "-v", "pico answers"]);
    try {
      await q.waitFor(/Press CTRL-C to quit/);
      await untilPasses(async () => {
        const r = await restGet(`${zest.url}/demo/pico/q`);
        const entries = r.body as Array<{ key: string; value: unknown }>;
        assert.ok(
          entries.some((e) => e.key === "demo/pico/q" && bytesValue(e.value) === "pico answers"),
          JSON.stringify(r.body),
        );
      });
      const get = runPico("z_get", ["-e", ep, "-k", "demo/pico/q"]);
      try {
        await get.waitFor(/>> Received PUT \('demo\/pico\/q': 'pico answers'\)/);
        await get.waitFor(/Received query final notification/);
      } finally {
        await get.stop();
      }
    } finally {
      await q.stop();
    }
  });

  test("z_info names zest's router id", async () => {
    const info = runPico("z_info", ["-e", ep]);
    try {
      const zid = /router ([0-9A-F]+)/.exec(zest.stderr())?.[1];
      assert.ok(zid);
      await info.waitFor(new RegExp(`^\\s*${zid.toLowerCase()}$`));
    } finally {
      await info.stop();
    }
  });

  test("liveliness: a z_liveliness token is seen by z_sub_liveliness -h and z_get_liveliness, and dies with its session", async () => {
    const token = runPico("z_liveliness", ["-e", ep, "-k", "group/pico/member"]);
    try {
      await token.waitFor(/Press CTRL-C/);
      const sub = runPico("z_sub_liveliness", ["-e", ep, "-k", "group/**", "-h"]);
      try {
        await sub.waitFor(/New alive token \('group\/pico\/member'\)/);
        const get = runPico("z_get_liveliness", ["-e", ep, "-k", "group/**"]);
        try {
          await get.waitFor(/Alive token \('group\/pico\/member'\)/);
        } finally {
          await get.stop();
        }
        await token.stop();
        await sub.waitFor(/Dropped token \('group\/pico\/member'\)/);
      } finally {
        await sub.stop();
      }
    } finally {
      await token.stop();
    }
  });

  test("a large z_put fragments, and REST reads it whole", async () => {
    const value = "x".repeat(100_000);
    await picoPut(["-e", ep, "-k", "demo/pico/large", "-v", value]);
    await untilPasses(async () => {
      const r = await restGet(`${zest.url}/demo/pico/large`);
      const [entry] = r.body as Array<{ value: string }>;
      assert.equal(bytesValue(entry?.value), value);
    });
  });

  test("a large REST PUT reaches z_sub in fragments", async () => {
    const sub = runPico("z_sub", ["-e", ep, "-k", "demo/pico/big"]);
    try {
      await sub.waitFor(/Press CTRL-C to quit/);
      const value = "y".repeat(200_000);
      await untilPasses(async () => {
        await fetch(`${zest.url}/demo/pico/big`, { method: "PUT", body: value });
        await sub.waitFor(/Received \('demo\/pico\/big': 'y{200000}'\)/, 1000);
      });
    } finally {
      await sub.stop();
    }
  });

  test("pico in peer mode puts and gets through zest", async () => {
    await picoPut(["-m", "peer", "-e", ep, "-k", "demo/pico/peer", "-v", "peer put"]);
    await untilPasses(async () => {
      const r = await restGet(`${zest.url}/demo/pico/peer`);
      const [entry] = r.body as Array<{ value: unknown }>;
      assert.equal(bytesValue(entry?.value), "peer put");
    });
  });
});

describe("zenoh-pico matching through zest", { skip }, () => {
  let zest: ZestProcess;
  let ep: string;

  before(async () => {
    // No storages: a publisher's matching status depends on the pico subscriber alone.
    zest = await startZest(["-l", "tcp/127.0.0.1:0", "--cfg", "plugins/storage_manager/storages:{}"]);
    ep = zenohLocatorOf(zest);
  });
  after(async () => {
    await zest?.stop();
  });

  test("z_pub -a learns when a subscriber matches and when it goes, and z_sub receives its puts", async () => {
    const pub = runPico("z_pub", ["-e", ep, "-k", "demo/match/x", "-v", "m", "-a"]);
    try {
      await pub.waitFor(/Press CTRL-C to quit/);
      assert.ok(!pub.lines().some((l) => l.includes("has matching subscribers")));
      const sub = runPico("z_sub", ["-e", ep, "-k", "demo/match/**"]);
      try {
        await pub.waitFor(/Publisher has matching subscribers\./, 10_000);
        await sub.waitFor(/Received \('demo\/match\/x': '\[\s*\d+\] m'\)/, 10_000);
      } finally {
        await sub.stop();
      }
      await pub.waitFor(/Publisher has NO MORE matching subscribers\./, 10_000);
    } finally {
      await pub.stop();
    }
  });
});
