import assert from "node:assert/strict";
import net from "node:net";
import { describe, test } from "node:test";
import { getJson, http, openSse } from "../support/http.js";
import { zestForSuite } from "../support/zest-process.js";
import { eventually } from "../support/wait.js";

const ZID = "0A0B";
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z\/0A0B$/;
const STORAGES = "/@/router/local/config/plugins/storage_manager/storages";

describe("Variant A: the example curl sessions", () => {
  const z = zestForSuite(["--id", ZID, "-P", "examples/eval-plugin.js", "-P", "test/fixtures/timestamped-plugin.js"]);

  test("GET @/router/local answers the router status with time None", async () => {
    const { status, entries, text } = await getJson(z.url, "/@/router/local");
    assert.equal(status, 200);
    assert.equal(entries.length, 1);
    const e = entries[0]!;
    assert.equal(e.key, `@/router/${ZID}`);
    assert.equal(e.encoding, "application/json");
    assert.equal(e.time, "None");
    const v = e.value as Record<string, unknown>;
    assert.equal(v.zid, ZID);
    assert.ok(typeof v.version === "string");
    assert.ok((v.locators as string[]).some((l) => l.startsWith("http://")));
    assert.ok(
      "rest" in (v.plugins as object) &&
        "storage_manager" in (v.plugins as object) &&
        "eval-plugin" in (v.plugins as object),
    );
    assert.deepEqual(Object.keys(v), [...Object.keys(v)].sort());
    assert.ok(Array.isArray(v.sessions));
    assert.match(
      text,
      /^\[\n\{ "key": "@\/router\/0A0B", "value": \{.*\}, "encoding": "application\/json", "time": "None" \}\n\]\n$/,
    );
  });

  test("plugin status keys: __path__ and version of rest and storage_manager, the bound port, -P plugins", async () => {
    const { entries } = await getJson(z.url, "/@/router/local/status/plugins/**");
    const byKey = new Map(entries.map((e) => [(e.key as string).slice(`@/router/${ZID}/status/plugins/`.length), e]));
    for (const k of ["rest/__path__", "rest/version", "storage_manager/__path__", "storage_manager/version"]) {
      assert.equal(typeof byKey.get(k)?.value, "string", k);
      assert.equal(byKey.get(k)?.time, "None", k);
    }
    assert.equal(byKey.get("rest/version")?.value, byKey.get("storage_manager/version")?.value);
    const port = byKey.get("rest/port")?.value as { http_port: string };
    assert.equal(port.http_port, `127.0.0.1:${new URL(z.url).port}`);
    assert.match(byKey.get("eval-plugin/__path__")?.value as string, /examples\/eval-plugin\.js$/);
    assert.equal(byKey.get("eval-plugin/__path__")?.encoding, "application/json");
  });

  test("a storage created through the admin space is listed and serves data", async () => {
    const put = await http(z.url, "PUT", `${STORAGES}/demo`, {
      body: '{key_expr:"demo/example/**", volume: "memory"}',
      headers: { "content-type": "application/json" },
    });
    assert.equal(put.status, 200);
    assert.equal(put.text, "");
    const { entries } = await getJson(z.url, "/@/router/local/status/plugins/storage_manager/storages/*");
    const demo = entries.find((e) => e.key === `@/router/${ZID}/status/plugins/storage_manager/storages/demo`);
    assert.deepEqual(demo?.value, { key_expr: "demo/example/**", volume: "memory" });
    assert.equal(demo?.encoding, "application/json");
    assert.equal(demo?.time, "None");
    // The router started without configuration, so the default storage on ** exists too.
    assert.ok(entries.some((e) => (e.key as string).endsWith("/storages/default")));
  });

  test("PUT text/plain then GET shows the exact entry layout", async () => {
    const put = await http(z.url, "PUT", "/demo/example/test", {
      body: "Hello World!",
      headers: { "content-type": "text/plain" },
    });
    assert.equal(put.status, 200);
    const r = await http(z.url, "GET", "/demo/example/test");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "application/json");
    assert.equal(r.headers.get("access-control-allow-origin"), "*");
    const m =
      /^\[\n\{ "key": "demo\/example\/test", "value": "Hello World!", "encoding": "text\/plain", "time": "([^"]+)" \}\n\]\n$/.exec(
        r.text,
      );
    assert.ok(m, r.text);
    assert.match(m[1]!, TIME);
  });

  test("DELETE removes the key and GET answers an empty array", async () => {
    await http(z.url, "PUT", "/demo/example/gone", { body: "x", headers: { "content-type": "text/plain" } });
    const del = await http(z.url, "DELETE", "/demo/example/gone");
    assert.equal(del.status, 200);
    const r = await http(z.url, "GET", "/demo/example/gone");
    assert.equal(r.text, "[\n\n]\n");
  });

  test("GET demo/** returns every key once, sorted by key", async () => {
    for (const k of ["c", "a", "b"])
      await http(z.url, "PUT", `/demo/sorted/${k}`, { body: `v${k}`, headers: { "content-type": "text/plain" } });
    const { entries } = await getJson(z.url, "/demo/sorted/**");
    assert.deepEqual(
      entries.map((e) => e.key),
      ["demo/sorted/a", "demo/sorted/b", "demo/sorted/c"],
    );
    assert.ok(entries.every((e) => TIME.test(e.time as string)));
  });

  test("the seed's eval: demo/example/*eval?(name=Bob) answers Eval from Bob with time None", async () => {
    const { entries } = await getJson(z.url, "/demo/example/*eval?(name=Bob)");
    assert.deepEqual(entries, [
      { key: "demo/example/zest-eval", value: "Eval from Bob", encoding: "text/plain", time: "None" },
    ]);
    const amp = await getJson(z.url, "/demo/example/zest-eval?name=Alice");
    assert.equal(amp.entries[0]?.value, "Eval from Alice");
    const plus = await getJson(z.url, "/demo/example/zest-eval?name=Bob+Smith");
    assert.equal(plus.entries[0]?.value, "Eval from Bob Smith");
  });

  test("@/**/storages/** lists storages, and ** never shows admin keys", async () => {
    // Its own storage and key, so the test holds whatever ran before it.
    const created = await http(z.url, "PUT", `${STORAGES}/listed`, {
      body: '{key_expr:"listed/**", volume: "memory"}',
      headers: { "content-type": "application/json" },
    });
    assert.equal(created.status, 200);
    await http(z.url, "PUT", "/listed/a", { body: "x", headers: { "content-type": "text/plain" } });
    const prefix = `@/router/${ZID}/status/plugins/storage_manager/storages/`;
    const { entries } = await getJson(z.url, "/@/**/storages/**");
    const names = entries.map((e) => (e.key as string).slice(prefix.length));
    assert.ok(names.includes("default") && names.includes("listed"), names.join(", "));
    assert.ok(entries.every((e) => (e.key as string).startsWith(prefix)));
    const all = await getJson(z.url, "/**");
    assert.ok(
      all.entries.some((e) => e.key === "listed/a"),
      "** reads the data keys",
    );
    assert.deepEqual(
      all.entries.filter((e) => (e.key as string).startsWith("@")),
      [],
    );
    assert.equal((await http(z.url, "DELETE", `${STORAGES}/listed`)).status, 200);
  });

  test("JSON values render as JSON; integers, floats and properties as typed values", async () => {
    const cases: Array<[string, string, unknown]> = [
      ["application/json", '{"value": "Hello World!"}', { value: "Hello World!" }],
      ["text/json", '[1, 2, {"a": null}]', [1, 2, { a: null }]],
      ["application/integer", "42", 42],
      ["application/float", "2.5", 2.5],
      ["application/properties", "a=1;b=two", { a: "1", b: "two" }],
      ["application/x-www-form-urlencoded", "Hello World!", "Hello World!"],
      ["application/json", "{not json", "{not json"],
      ["application/integer", "abc", "abc"],
    ];
    for (const [ct, body, expected] of cases) {
      await http(z.url, "PUT", "/demo/typed/v", { body, headers: { "content-type": ct } });
      const { entries } = await getJson(z.url, "/demo/typed/v");
      assert.deepEqual(entries[0]?.value, expected, `${ct} ${body}`);
      assert.equal(entries[0]?.encoding, ct);
    }
  });

  test("JSON and numbers keep their original digits (no float rounding)", async () => {
    const cases: Array<[string, string, string]> = [
      ["application/json", '{"id": 12345678901234567890,\n "f": 1.10}', '{"id":12345678901234567890,"f":1.10}'],
      ["application/integer", "9007199254740993", "9007199254740993"],
      ["application/float", "0.1000000000000000055511151231257827", "0.1000000000000000055511151231257827"],
    ];
    for (const [ct, body, value] of cases) {
      await http(z.url, "PUT", "/demo/typed/exact", { body, headers: { "content-type": ct } });
      const r = await http(z.url, "GET", "/demo/typed/exact");
      assert.ok(r.text.includes(`"value": ${value}, "encoding": "${ct}"`), r.text);
      JSON.parse(r.text);
    }
  });

  test("no content-type means application/octet-stream, rendered base64", async () => {
    const res = await fetch(`${z.url}/demo/raw/bin`, { method: "PUT", body: new Uint8Array([0xff, 0x00, 0x41]) });
    assert.equal(res.status, 200);
    const { entries } = await getJson(z.url, "/demo/raw/bin");
    assert.equal(entries[0]?.encoding, "application/octet-stream");
    assert.equal(entries[0]?.value, Buffer.from([0xff, 0x00, 0x41]).toString("base64"));
  });

  test("a non-UTF-8 text/plain body is kept and rendered as base64, never breaking JSON", async () => {
    const bytes = Buffer.from([0xc3, 0x28, 0x0a, 0x22]);
    const res = await fetch(`${z.url}/demo/raw/bad`, {
      method: "PUT",
      body: bytes,
      headers: { "content-type": "text/plain" },
    });
    assert.equal(res.status, 200);
    const { entries } = await getJson(z.url, "/demo/raw/bad");
    assert.equal(entries[0]?.value, bytes.toString("base64"));
  });

  test("values with quotes and newlines stay valid JSON on one line", async () => {
    await http(z.url, "PUT", "/demo/raw/nl", { body: 'a "quoted"\nline', headers: { "content-type": "text/plain" } });
    const { entries, text } = await getJson(z.url, "/demo/raw/nl");
    assert.equal(entries[0]?.value, 'a "quoted"\nline');
    assert.equal(text.split("\n").length, 4);
    await http(z.url, "PUT", "/demo/raw/pretty", {
      body: '{\n  "a": 1\n}',
      headers: { "content-type": "application/json" },
    });
    const pretty = await http(z.url, "GET", "/demo/raw/pretty");
    assert.equal(pretty.text.split("\n").length, 4);
  });

  test("GET with Accept text/html renders an escaped HTML list", async () => {
    await http(z.url, "PUT", "/demo/html/x", {
      body: "<script>alert(1)</script>",
      headers: { "content-type": "text/plain" },
    });
    const r = await http(z.url, "GET", "/demo/html/x", { headers: { accept: "text/html,application/xhtml+xml" } });
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /^text\/html/);
    assert.equal(r.text, "<dl>\n<dt>demo/html/x</dt>\n<dd>&lt;script&gt;alert(1)&lt;/script&gt;</dd>\n\n</dl>\n");
  });

  test("volumes are listed, memory as {__required__: false}", async () => {
    const { entries } = await getJson(z.url, "/@/router/local/**/volumes/*");
    assert.deepEqual(entries.find((e) => (e.key as string).endsWith("/volumes/memory"))?.value, {
      __required__: false,
    });
  });

  test("the seed's @/local/router/config path creates and removes a storage", async () => {
    const put = await http(z.url, "PUT", "/@/local/router/config/plugins/storage_manager/storages/seedalias", {
      body: '{"key_expr":"seed/**","volume":"memory"}',
      headers: { "content-type": "application/json" },
    });
    assert.equal(put.status, 200);
    let list = await getJson(z.url, "/@/**/storages/seedalias");
    assert.equal(list.entries.length, 1);
    const del = await http(z.url, "DELETE", `${STORAGES}/seedalias`);
    assert.equal(del.status, 200);
    list = await getJson(z.url, "/@/**/storages/seedalias");
    assert.equal(list.entries.length, 0);
  });

  test("admin writes that no admin space takes are a 404, never a silent 200", async () => {
    for (const path of [
      "/@/routers/local/config/plugins/storage_manager/storages/lost",
      "/@/local/config/plugins/storage_manager/storages/lost",
      "/@/router/FFFF/config/plugins/storage_manager/storages/lost",
    ]) {
      const r = await http(z.url, "PUT", path, { body: '{key_expr:"lost/**",volume:"memory"}' });
      assert.equal(r.status, 404, path);
      assert.equal(
        r.text,
        `no admin key takes writes at ${path}: storages are configured under /@/router/0A0B/config/plugins/storage_manager/storages/<name>\n`,
      );
      assert.equal(r.text.trim().split("\n").length, 1);
    }
    assert.deepEqual((await getJson(z.url, "/@/**/storages/lost")).entries, []);
  });

  test("the router id in an admin path matches case-insensitively", async () => {
    const put = await http(z.url, "PUT", "/@/router/0a0b/config/plugins/storage_manager/storages/lower", {
      body: '{key_expr:"lower/**",volume:"memory"}',
    });
    assert.equal(put.status, 200);
    assert.equal(
      (await getJson(z.url, "/@/router/0a0b/status/plugins/storage_manager/storages/lower")).entries.length,
      1,
    );
    const del = await http(z.url, "DELETE", "/@/router/0a0b/config/plugins/storage_manager/storages/lower");
    assert.equal(del.status, 200);
    assert.deepEqual((await getJson(z.url, "/@/**/storages/lower")).entries, []);
  });

  test("_time turns consolidation off and a bad _time is a 400 with the reason", async () => {
    await http(z.url, "PUT", "/demo/time/k", { body: "1", headers: { "content-type": "text/plain" } });
    const ok = await getJson(z.url, "/demo/time/k?_time=[..]");
    assert.equal(ok.status, 200);
    assert.equal(ok.entries.length, 1);
    // A range that excludes the write returns nothing, even from a memory storage.
    const past = await getJson(z.url, "/demo/time/k?_time=[now(-2h)..now(-1h)]");
    assert.deepEqual(past.entries, []);
    // An offset typed with a bare + (which form decoding reads as a space) still parses.
    const offset = await getJson(z.url, "/demo/time/k?_time=[2000-01-01T02:00:00+02:00..]&x=1");
    assert.equal(offset.status, 200);
    assert.equal(offset.entries.length, 1);
    // Checked before the query: a 400 with one plain line, whether or not a storage holds the key.
    for (const path of [
      "/demo/time/k?_time=[yesterday..]",
      "/@/router/local?_time=[yesterday..]",
      "/nostorage/here?x=1&_time=[now(-1h)..soon]",
    ]) {
      const bad = await http(z.url, "GET", path);
      assert.equal(bad.status, 400, path);
      assert.match(bad.headers.get("content-type") ?? "", /^text\/plain/);
      assert.match(bad.text, /^invalid time "[^"]+"/);
      assert.equal(bad.text.trim().split("\n").length, 1);
    }
  });

  test("repeated GETs see every write, delete and storage change at once (read cache)", async () => {
    for (let i = 0; i < 30; i++) {
      await http(z.url, "PUT", "/demo/cache/k", { body: `v${i}`, headers: { "content-type": "text/plain" } });
      for (let j = 0; j < 2; j++) assert.equal((await getJson(z.url, "/demo/cache/k")).entries[0]?.value, `v${i}`);
    }
    await http(z.url, "DELETE", "/demo/cache/k");
    assert.deepEqual((await getJson(z.url, "/demo/cache/k")).entries, []);
    // The eval is computed each time; the admin space reflects storage changes at once.
    for (const name of ["A", "B"])
      assert.equal(
        (await getJson(z.url, `/demo/example/zest-eval?name=${name}`)).entries[0]?.value,
        `Eval from ${name}`,
      );
    const before = (await getJson(z.url, "/@/**/storages/**")).entries.length;
    await http(z.url, "PUT", `${STORAGES}/cachetest`, { body: '{key_expr:"cachetest/**",volume:"memory"}' });
    assert.equal((await getJson(z.url, "/@/**/storages/**")).entries.length, before + 1);
    await http(z.url, "DELETE", `${STORAGES}/cachetest`);
    assert.equal((await getJson(z.url, "/@/**/storages/**")).entries.length, before);
  });

  test("a plugin's timestamped answers are computed on every GET, never served from the read cache", async () => {
    const values = new Set<unknown>();
    for (let i = 0; i < 3; i++) values.add((await getJson(z.url, "/test/ts")).entries[0]?.value);
    assert.equal(values.size, 3, [...values].join(", "));
  });

  test("wildcard DELETE removes every matching key; wildcard PUT updates every existing one", async () => {
    for (const k of ["a", "b", "c"])
      await http(z.url, "PUT", `/demo/wild/${k}`, { body: k, headers: { "content-type": "text/plain" } });
    await http(z.url, "PUT", "/demo/wild/*", { body: "same", headers: { "content-type": "text/plain" } });
    let r = await getJson(z.url, "/demo/wild/*");
    assert.deepEqual(
      r.entries.map((e) => e.value),
      ["same", "same", "same"],
    );
    await http(z.url, "DELETE", "/demo/wild/**");
    r = await getJson(z.url, "/demo/wild/**");
    assert.deepEqual(r.entries, []);
  });
});

describe("Variant A: SSE", () => {
  const z = zestForSuite(["--id", ZID]);

  const sseStreams = async (): Promise<number> => {
    const { entries } = await getJson(z.url, "/@/router/local/status/plugins/rest/port");
    return (entries[0]!.value as { sse_streams: number }).sse_streams;
  };

  test("PUT and DELETE events arrive in order, as one JSON line each, to every subscriber", async () => {
    const a = await openSse(`${z.url}/demo/sse/**`);
    const b = await openSse(`${z.url}/demo/sse/*`);
    assert.equal(a.status, 200);
    assert.equal(a.headers.get("content-type"), "text/event-stream");
    for (let i = 0; i < 5; i++)
      await http(z.url, "PUT", `/demo/sse/k${i}`, {
        body: `v${i}\nwith newline`,
        headers: { "content-type": "text/plain" },
      });
    await http(z.url, "DELETE", "/demo/sse/k0");
    await http(z.url, "PUT", "/other/key", { body: "not for us" });
    for (const c of [a, b]) {
      const events = await c.next(6);
      assert.deepEqual(
        events.map((e) => e.event),
        ["PUT", "PUT", "PUT", "PUT", "PUT", "DELETE"],
      );
      const parsed = events.map((e) => JSON.parse(e.data) as Record<string, unknown>);
      assert.deepEqual(
        parsed.slice(0, 5).map((p) => p.value),
        [0, 1, 2, 3, 4].map((i) => `v${i}\nwith newline`),
      );
      assert.equal(parsed[5]?.key, "demo/sse/k0");
      assert.match(parsed[0]?.time as string, TIME);
    }
    a.close();
    b.close();
  });

  test("SSE framing is exact: a retry hint and the position first, then id, event and one data line with key, value, encoding, time, blank line", async () => {
    const ac = new AbortController();
    const res = await fetch(`${z.url}/demo/frame/**`, { headers: { accept: "text/event-stream" }, signal: ac.signal });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    await http(z.url, "PUT", "/demo/frame/a", {
      body: '{"n": 12345678901234567890}',
      headers: { "content-type": "application/json" },
    });
    await http(z.url, "DELETE", "/demo/frame/a");
    let text = "";
    const deadline = Date.now() + 5_000;
    while (text.split("\n\n").length < 4 && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    ac.abort();
    const T = "\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{9}Z/0A0B";
    const ID = "id: [0-9a-f]{8}-\\d+\\n";
    const expected = new RegExp(
      `^retry: 3000\\n${ID}\\n` +
        `${ID}event: PUT\\ndata: \\{ "key": "demo/frame/a", "value": \\{"n":12345678901234567890\\}, "encoding": "application/json", "time": "${T}" \\}\\n\\n` +
        `${ID}event: DELETE\\ndata: \\{ "key": "demo/frame/a", "value": "", "encoding": "", "time": "${T}" \\}\\n\\n$`,
    );
    assert.match(text, expected);
  });

  test("SSE on the wire: one HTTP chunk per message on HTTP/1.1, the bare message on HTTP/1.0", async () => {
    /** Opens a stream on a raw socket and returns what arrived once `until` shows up. */
    const raw = async (version: string, key: string, until: string, put: () => Promise<unknown>): Promise<string> => {
      const { port, hostname } = new URL(z.url);
      const socket = net.connect({ host: hostname, port: Number(port) });
      socket.setEncoding("utf8");
      let text = "";
      socket.on("data", (c: string) => (text += c));
      socket.write(`GET /${key} HTTP/${version}\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n`);
      try {
        await eventually(async () => text.includes("\r\n\r\n"), 5_000, "the response head");
        await put();
        await eventually(async () => text.includes(until), 5_000, `${until} on HTTP/${version}`);
        return text;
      } finally {
        socket.destroy();
      }
    };
    const putV = (key: string) => () =>
      http(z.url, "PUT", `/${key}`, { body: "v", headers: { "content-type": "text/plain" } });
    const message = (key: string): RegExp =>
      new RegExp(
        `id: [0-9a-f]{8}-\\d+\\nevent: PUT\\ndata: \\{ "key": "${key}", "value": "v", "encoding": "text/plain", "time": "[^"]+" \\}\\n\\n`,
      );

    // An event ends in `}` and a blank line, and its chunk in CRLF; the prelude (retry hint and
    // position) is a chunk of its own before it.
    const prelude = /^retry: 3000\nid: [0-9a-f]{8}-\d+\n\n/;
    const chunked = await raw("1.1", "demo/wire11/*", "}\n\n\r\n", putV("demo/wire11/a"));
    let body11 = chunked.slice(chunked.indexOf("\r\n\r\n") + 4);
    assert.match(chunked, /^HTTP\/1\.1 200 .*\r\n[\s\S]*transfer-encoding: chunked\r\n/i);
    const first = /^([0-9a-f]+)\r\n/.exec(body11)!;
    const firstEnd = first[0].length + parseInt(first[1]!, 16);
    assert.match(body11.slice(first[0].length, firstEnd), new RegExp(`${prelude.source}$`));
    body11 = body11.slice(firstEnd + 2);
    const m = /^([0-9a-f]+)\r\n/.exec(body11);
    assert.ok(m, `a chunk size line first: ${JSON.stringify(body11)}`);
    const size = parseInt(m[1]!, 16);
    const payload = body11.slice(m[0].length, m[0].length + size);
    assert.match(payload, new RegExp(`^${message("demo/wire11/a").source}$`));
    assert.equal(body11.slice(m[0].length + size, m[0].length + size + 2), "\r\n", "the chunk ends with CRLF");

    const plain = await raw("1.0", "demo/wire10/*", "}\n\n", putV("demo/wire10/a"));
    assert.match(plain, /^HTTP\/1\.1 200 /);
    assert.doesNotMatch(plain, /transfer-encoding: chunked/i);
    assert.match(
      plain.slice(plain.indexOf("\r\n\r\n") + 4),
      new RegExp(`${prelude.source}${message("demo/wire10/a").source}$`),
    );
  });

  test("SSE on an invalid key expression is a 400", async () => {
    const r = await http(z.url, "GET", "/demo//x", { headers: { accept: "text/event-stream" } });
    assert.equal(r.status, 400);
    assert.match(r.headers.get("content-type") ?? "", /^text\/plain/);
  });

  test("a client that disconnects is released at once", async () => {
    await eventually(async () => (await sseStreams()) === 0, 5_000, "previous streams to close");
    const c = await openSse(`${z.url}/demo/leak/**`);
    assert.equal(await sseStreams(), 1);
    c.close();
    await eventually(async () => (await sseStreams()) === 0, 2_000, "the stream to be released");
  });
});
