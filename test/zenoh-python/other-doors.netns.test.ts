/**
 * zenoh-python 1.10, in client and in peer mode, with REST, SSE, storages, zenoh-pico and
 * zenoh-ts (the remote API) on the other side of zest: one key space whatever the door.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { openSse, restGet } from "../support/http.js";
import { untilPasses } from "../support/assert.js";
import { picoPut, picoSkip, runPico } from "../support/pico.js";
import { locatorOf, openClient, roundTrip } from "../remote/helpers.js";
import { Encoding, type Sample as TsSample } from "@eclipse-zenoh/zenoh-ts";
import {
  type AgentLine,
  pattern,
  pythonSkip,
  type ReplyJson,
  sha256,
  describeEachMode,
  zestForPythonSuite,
} from "../support/zenoh-python.js";

const skip = pythonSkip();
type Entry = { key: string; value: unknown; encoding: string; time: string };

describe("zenoh-python with REST, SSE, pico and zenoh-ts on the other side of zest", { skip }, () => {
  const py = zestForPythonSuite(["--cfg", "plugins/remote_api:{websocket_port:0}"]);

  describeEachMode(py, 1, "demo/py", ({ mode, a, k }) => {
    test("a python put is stored: REST GET reads it with its encoding, and a python delete removes it", async () => {
      await a.call("put", { key: k("stored"), payload: '{"from":"python"}', encoding: "application/json" });
      await untilPasses(async () => {
        const r = await restGet(`${py.zest.url}/${k("stored")}`);
        const entries = r.body as Entry[];
        assert.equal(entries.length, 1, JSON.stringify(r.body));
        assert.deepEqual(entries[0]?.value, { from: "python" });
        assert.equal(entries[0]?.encoding, "application/json");
        assert.match(entries[0]?.time ?? "", /^\d{4}-\d\d-\d\dT[^/]+Z\/[0-9A-F]+$/);
      });
      await a.call("delete", { key: k("stored") });
      await untilPasses(async () => {
        assert.deepEqual((await restGet(`${py.zest.url}/${k("stored")}`)).body, []);
      });
    });

    test("a REST PUT reaches a python subscriber with its content type as encoding", async () => {
      await a.call("sub", { name: "rest", key: k("from-rest/**") });
      const res = await fetch(`${py.zest.url}/${k("from-rest/a")}`, {
        method: "PUT",
        body: "from REST",
        headers: { "content-type": "text/plain" },
      });
      assert.equal(res.status, 200);
      const s = await a.waitSample("rest", k("from-rest/a"));
      assert.equal(s.payload.text, "from REST");
      assert.equal(s.encoding, "text/plain");
      assert.ok(s.timestamp);
      await fetch(`${py.zest.url}/${k("from-rest/a")}`, { method: "DELETE" });
      const d = await a.waitEvent<AgentLine>((e) => e.name === "rest" && e.kind === "DELETE");
      assert.equal(d.key, k("from-rest/a"));
      await a.call("undeclare", { name: "rest" });
    });

    test("an SSE stream sees python puts and deletes", async () => {
      const sse = await openSse(`${py.zest.url}/${k("sse/**")}`);
      try {
        await a.call("put", { key: k("sse/x"), payload: "live", encoding: "text/plain" });
        const [put] = await sse.next(1, 10_000);
        assert.equal(put?.event, "PUT");
        const entry = JSON.parse(put!.data) as Entry;
        assert.equal(entry.key, k("sse/x"));
        assert.equal(entry.value, "live");
        await a.call("delete", { key: k("sse/x") });
        const [del] = await sse.next(1, 10_000);
        assert.equal(del?.event, "DELETE");
      } finally {
        sse.close();
      }
    });

    test("a python get reads what REST stored, and a python queryable answers a REST GET", async () => {
      await fetch(`${py.zest.url}/${k("kept")}`, {
        method: "PUT",
        body: "kept by zest",
        headers: { "content-type": "text/plain" },
      });
      const r = await a.call<{ replies: ReplyJson[] }>("get", { selector: k("kept"), timeout: 5 });
      assert.deepEqual(
        r.replies.map((x) => [x.ok?.key, x.ok?.payload.text, x.ok?.encoding]),
        [[k("kept"), "kept by zest", "text/plain"]],
      );
      await a.call("queryable", {
        name: "eval",
        key: `py/${mode}/eval`,
        replies: [{ payload: "computed in python", encoding: "text/plain" }],
      });
      await untilPasses(async () => {
        const g = await restGet(`${py.zest.url}/py/${mode}/eval?(name=Bob)`);
        assert.deepEqual(
          (g.body as Entry[]).map((e) => [e.key, e.value]),
          [[`py/${mode}/eval`, "computed in python"]],
        );
      });
      const q = await a.waitEvent<AgentLine>((e) => e.ev === "query" && e.name === "eval");
      assert.match(String(q.parameters), /name=Bob/);
      await a.call("undeclare", { name: "eval" });
    });

    test("a 128 KiB REST PUT reaches a python subscriber in fragments", async () => {
      await a.call("sub", { name: "big", key: k("big-in") });
      const value = pattern(128 * 1024, 9);
      const res = await fetch(`${py.zest.url}/${k("big-in")}`, {
        method: "PUT",
        body: new Uint8Array(value),
        headers: { "content-type": "application/octet-stream" },
      });
      assert.equal(res.status, 200);
      const s = await a.waitSample("big", k("big-in"));
      assert.equal(s.payload.len, value.length);
      assert.equal(s.payload.sha256, sha256(value));
      await a.call("undeclare", { name: "big" });
    });

    test("pico on the other side: z_sub receives a python put, and a python subscriber a z_put", {
      skip: picoSkip("z_sub", "z_put"),
    }, async () => {
      const sub = runPico("z_sub", ["-e", py.ep, "-k", k("pico/**")]);
      try {
        await sub.waitFor(/Press CTRL-C to quit/);
        await untilPasses(async () => {
          await a.call("put", { key: k("pico/to"), payload: "from python" });
          await sub.waitFor(/Received (PUT )?\('demo\/py\/\w+\/pico\/to': 'from python'\)/, 500);
        });
      } finally {
        await sub.stop();
      }
      await a.call("sub", { name: "frompico", key: k("pico/from") });
      await picoPut(["-e", py.ep, "-k", k("pico/from"), "-v", "from pico"]);
      const s = await a.waitSample("frompico", k("pico/from"));
      assert.equal(s.payload.text, "from pico");
      await a.call("undeclare", { name: "frompico" });
    });

    test("zenoh-ts on the other side: its subscriber gets a python put, and a python subscriber its put", async () => {
      const ts = await openClient(locatorOf(py.zest));
      try {
        const got: TsSample[] = [];
        const sub = await ts.declareSubscriber(k("ts/**"), { handler: (s: TsSample) => void got.push(s) });
        await roundTrip(ts);
        await a.call("put", { key: k("ts/to"), payload: "from python", encoding: "text/plain", attachment: "at" });
        await untilPasses(() => assert.equal(got.length, 1));
        assert.equal(got[0]!.keyexpr().toString(), k("ts/to"));
        assert.equal(got[0]!.payload().toString(), "from python");
        assert.equal(got[0]!.encoding().toString(), "text/plain");
        assert.equal(got[0]!.attachment()?.toString(), "at");
        await sub.undeclare();
        await a.call("sub", { name: "fromts", key: k("ts/from") });
        await ts.put(k("ts/from"), "from zenoh-ts", { encoding: Encoding.APPLICATION_JSON });
        const s = await a.waitSample("fromts", k("ts/from"));
        assert.equal(s.payload.text, "from zenoh-ts");
        assert.equal(s.encoding, "application/json");
        await a.call("undeclare", { name: "fromts" });
      } finally {
        await ts.close();
      }
    });

    // Last: after its fragmented put the session is closed by zest at its next message
    // (see the todo of the same name in pubsub.netns.test.ts); this one put arrives whole.
    test("a 128 KiB python put is stored whole and REST reads it", async () => {
      const size = 128 * 1024;
      await a.call("put", { key: k("big-out"), payload_size: size, payload_seed: 4, congestion: "BLOCK" });
      await untilPasses(async () => {
        const r = await restGet(`${py.zest.url}/${k("big-out")}`);
        const [entry] = r.body as Entry[];
        assert.equal(entry?.encoding, "zenoh/bytes");
        assert.equal(sha256(Buffer.from(String(entry?.value), "base64")), sha256(pattern(size, 4)));
      });
    });
  });
});
