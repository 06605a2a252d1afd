/**
 * Session-bound values over the remote API (docs/ttl-and-leases.md), with the real zenoh-ts
 * client: a put whose attachment is `zest:session` is deleted when the client's session closes,
 * cleanly or by the death of its process; `zest:ttl=` and `zest:lease=` work the same way.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, describe, test } from "node:test";
import type { Sample, Session as ZSession } from "@eclipse-zenoh/zenoh-ts";
import { http } from "../support/http.js";
import { openClient, showSample, startRemoteRouter } from "../remote/helpers.js";
import type { Zest } from "../../src/runtime.js";
import { eventually } from "../support/wait.js";

describe("session-bound values on the remote API (zenoh-ts)", () => {
  let z: Zest & { locator: string };
  let watcher: ZSession;
  const seen: string[] = [];
  before(async () => {
    z = await startRemoteRouter();
    watcher = await openClient(z.locator);
    await watcher.declareSubscriber("sb/**", { handler: (s: Sample) => void seen.push(showSample(s)) });
  });
  after(async () => {
    await watcher?.close();
    await z?.close();
  });
  const keys = async (): Promise<string[]> =>
    (JSON.parse((await http(z.restUrl!, "GET", "/sb/**")).text) as Array<{ key: string }>).map((e) => e.key);

  test("a value put with the zest:session attachment is deleted when its session closes; others stay", async () => {
    const a = await openClient(z.locator);
    await a.put("sb/bound", "mine", { attachment: "zest:session" });
    await a.put("sb/kept", "permanent");
    const pub = await a.declarePublisher("sb/pub");
    await pub.put("published", { attachment: "zest:session" });
    await eventually(() => seen.includes("put:sb/pub=published"), 3_000, "the puts");
    assert.deepEqual(await keys(), ["sb/bound", "sb/kept", "sb/pub"]);
    await a.close();
    await eventually(() => seen.includes("delete:sb/bound") && seen.includes("delete:sb/pub"), 3_000, "the deletes");
    assert.deepEqual(await keys(), ["sb/kept"]);
  });

  test("zest:ttl= gives a lifetime, and the zest: attachment is not handed on to subscribers", async () => {
    const a = await openClient(z.locator);
    const got: Sample[] = [];
    await watcher.declareSubscriber("sbt/**", { handler: (s: Sample) => void got.push(s) });
    try {
      await a.put("sbt/a", "short", { attachment: "zest:ttl=300ms" });
      await a.put("sbt/b", "user data", { attachment: "zesty" });
      await eventually(() => got.length === 2, 3_000, "the puts");
      assert.equal(got[0]!.attachment(), undefined);
      assert.equal(got[1]!.attachment()?.toString(), "zesty");
      await eventually(() => got.length === 3, 5_000, "the expiry's delete");
      assert.equal(showSample(got[2]!), "delete:sbt/a");
    } finally {
      await a.close();
    }
  });

  test("a client process killed with SIGKILL loses its session-bound values", async () => {
    const script = `
      import { Config, open } from "@eclipse-zenoh/zenoh-ts";
      console.log = console.warn = () => undefined;
      const s = await open(new Config(${JSON.stringify(z.locator)}));
      await s.put("sb/killed", "alive", { attachment: "zest:session" });
      await s.newTimestamp();
      process.stdout.write("ready\\n");
      setInterval(() => undefined, 1000);
    `;
    const child = spawn(
      process.execPath,
      ["--experimental-wasm-modules", "--experimental-websocket", "--no-warnings", "--input-type=module", "-e", script],
      { cwd: process.cwd(), stdio: ["ignore", "pipe", "inherit"] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (d: Buffer) => d.toString().includes("ready") && resolve());
        child.on("exit", (code) => reject(new Error(`the client exited first (${code})`)));
      });
      await eventually(() => seen.includes("put:sb/killed=alive"), 3_000, "the put");
      assert.ok((await keys()).includes("sb/killed"));
    } finally {
      child.kill("SIGKILL");
    }
    await eventually(() => seen.includes("delete:sb/killed"), 5_000, "the delete after the kill");
    assert.ok(!(await keys()).includes("sb/killed"));
  });
});
