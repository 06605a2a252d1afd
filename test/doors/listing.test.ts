/**
 * Every running front door is listed the same way (docs/adding-a-front-door.md): in the router's
 * `locators`, under `status/plugins/<door>` in the admin space, and in the per-door metrics,
 * a door registered from its own folder included.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { connect } from "node:net";
import { test } from "node:test";
import type { AnyFrontDoor } from "../../src/access/front-door.js";
import { ConfigError } from "../../src/config/config.js";
import { silentLogger } from "../../src/core/log.js";
import { startZest } from "../../src/runtime.js";
import { lineDoor } from "./line/door.js";
import { eventually } from "../support/wait.js";

test("every door appears in locators, in the admin space and in the metrics", async () => {
  const zest = await startZest(
    {
      plugins: {
        rest: { http_port: "127.0.0.1:0" },
        remote_api: { websocket_port: "127.0.0.1:0" },
        line: { port: "127.0.0.1:0", max_connections_per_address: 1 },
      },
      listen: { endpoints: ["tcp/127.0.0.1:0"] },
    },
    { logger: silentLogger, doors: [lineDoor] },
  );
  try {
    assert.deepEqual(
      zest.doors.map((d) => d.name),
      ["rest", "remote_api", "zenoh", "line"],
    );
    const zid = zest.router.zid;
    const value = async (key: string): Promise<unknown> => {
      const [reply] = await zest.session.get(key);
      assert.ok(reply && reply.kind === "ok", key);
      return JSON.parse(Buffer.from(reply.sample.payload).toString("utf8"));
    };
    const router = (await value(`@/router/${zid}`)) as { locators: string[]; plugins: Record<string, unknown> };
    assert.equal(router.locators.length, 4);
    assert.match(router.locators[0]!, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(router.locators[1]!, /^ws:\/\/127\.0\.0\.1:\d+$/);
    assert.match(router.locators[2]!, /^tcp\/127\.0\.0\.1:\d+$/);
    assert.match(router.locators[3]!, /^tcp:\/\/127\.0\.0\.1:\d+$/);
    assert.deepEqual(Object.keys(router.plugins).sort(), ["line", "remote_api", "rest", "storage_manager", "zenoh"]);
    const remote = (await value(`@/router/${zid}/status/plugins/remote_api/status`)) as { connections: number };
    assert.equal(remote.connections, 0);

    // One line connection held, a second refused by the cap: the metrics count both, per door.
    const port = Number(new URL(router.locators[3]!).port);
    const held = connect({ host: "127.0.0.1", port });
    await new Promise((resolve) => held.once("connect", resolve));
    const refused = connect({ host: "127.0.0.1", port });
    refused.on("error", () => undefined);
    await new Promise((resolve) => refused.once("close", resolve));
    try {
      await eventually(
        async () => {
          const [m] = await zest.session.get(`@/router/${zid}/metrics`);
          const text = m?.kind === "ok" ? Buffer.from(m.sample.payload).toString("utf8") : "";
          return (
            text.includes('zest_door_connections{door="line"} 1') &&
            text.includes('zest_door_connections_refused_total{door="line"} 1') &&
            text.includes('zest_door_connections{door="remote_api"} 0') &&
            /zest_door_connections\{door="rest"\} \d/.test(text)
          );
        },
        5_000,
        "per-door metrics",
      );
    } finally {
      held.destroy();
    }
  } finally {
    await zest.close();
  }
});

test("a door whose name another part already owns is refused at start, naming the section", async () => {
  const clash: AnyFrontDoor = { ...lineDoor, name: "rest" };
  await assert.rejects(
    startZest({ plugins: { rest: { http_port: "none" } } }, { logger: silentLogger, doors: [clash] }),
    (err: unknown) => err instanceof ConfigError && /two parts claim plugins\.rest/.test(err.message),
  );
});
