import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { makeSample } from "../../src/core/sample.js";
import { renderValueJson } from "../../src/rest/render-value.js";
import { codecA } from "../../src/rest/variant-a.js";
import { renderValueB } from "../../src/rest/variant-b.js";

const render = (text: string, encoding: string): string => renderValueJson(Buffer.from(text), encoding);

describe("Variant A value rendering keeps the original text", () => {
  test("JSON keeps big integers and number spellings exactly, on one line", () => {
    assert.equal(render('{"id": 12345678901234567890}', "application/json"), '{"id":12345678901234567890}');
    assert.equal(render("[1.0, 1e2, -0.50]", "application/json"), "[1.0,1e2,-0.50]");
    assert.equal(
      render('{\n  "a" : "x y\\n z",\r\n\t"b": [ 1, 2 ]\n}\n', "application/json"),
      '{"a":"x y\\n z","b":[1,2]}',
    );
    assert.equal(render('"quote \\" inside  two spaces"', "text/json"), '"quote \\" inside  two spaces"');
    assert.equal(render('{"u":"\\u0041"}', "application/json"), '{"u":"\\u0041"}');
  });

  test("malformed JSON is a JSON string", () => {
    assert.equal(render("{not json", "application/json"), '"{not json"');
    assert.equal(render("", "application/json"), '""');
  });

  test("integers and floats: valid JSON numbers verbatim, other numerals canonical, the rest strings", () => {
    assert.equal(render("9007199254740993", "application/integer"), "9007199254740993");
    assert.equal(render("1.50", "application/float"), "1.50");
    assert.equal(render("-2e-3", "application/float"), "-2e-3");
    assert.equal(render(" 42 ", "application/integer"), "42");
    assert.equal(render(".5", "application/float"), "0.5");
    assert.equal(render("+7", "application/integer"), "7");
    assert.equal(render("abc", "application/integer"), '"abc"');
    assert.equal(render("", "application/integer"), '""');
    assert.equal(render("Infinity", "application/float"), '"Infinity"');
    assert.equal(render("NaN", "application/float"), '"NaN"');
  });

  test("every rendering is valid JSON", () => {
    for (const [text, enc] of [
      ["1e400", "application/float"],
      ["0x10", "application/integer"],
      ['{"a":[]}', "application/json"],
      ["a=1;b", "application/properties"],
    ] as const) {
      JSON.parse(render(text, enc));
    }
  });
});

describe("Variant A text values", () => {
  /** What a text value must render as: its UTF-8 text as a JSON string, or base64 when it is not UTF-8. */
  const reference = (payload: Buffer): string => {
    try {
      return JSON.stringify(new TextDecoder("utf-8", { fatal: true }).decode(payload));
    } catch {
      return JSON.stringify(payload.toString("base64"));
    }
  };

  test("short text renders as JSON.stringify of its UTF-8 text, whatever its bytes", () => {
    // Every single byte, and each printable one next to the bytes that need escaping or are not
    // ASCII: the plain-ASCII shortcut must step aside for all of them.
    for (let b = 0; b < 256; b++) {
      for (const payload of [Buffer.from([b]), Buffer.from([0x61, b, 0x7a]), Buffer.from([b, 0x22, 0x5c])]) {
        assert.equal(renderValueJson(payload, "text/plain"), reference(payload), `bytes ${payload.toString("hex")}`);
      }
    }
    for (const text of [
      'say "hi"',
      "back\\slash",
      "tab\there",
      "new\nline",
      "café",
      "日本",
      "😀",
      "\u007f",
      "~ }{ |",
    ]) {
      const payload = Buffer.from(text);
      assert.equal(renderValueJson(payload, "text/plain"), reference(payload), text);
    }
  });

  test("random byte strings around the shortcut's length limit render as the reference", () => {
    let seed = 7;
    const rand = (): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let i = 0; i < 5000; i++) {
      const n = 56 + (rand() % 16); // 56..71 bytes: both sides of 64
      // Mostly printable ASCII, now and then any byte.
      const payload = Buffer.from(
        Array.from({ length: n }, () => (rand() % 40 === 0 ? rand() % 256 : 0x20 + (rand() % 95))),
      );
      assert.equal(renderValueJson(payload, "text/plain"), reference(payload), payload.toString("hex"));
    }
  });
});

describe("Variant B value rendering keeps the original JSON text too", () => {
  test("big integers and number spellings survive, on one line; malformed JSON is a string", () => {
    const b = (text: string, encoding: string): string => renderValueB(Buffer.from(text), encoding);
    assert.equal(
      b('{"id": 12345678901234567890,\n "f": 1.0}', "application/json"),
      '{"id":12345678901234567890,"f":1.0}',
    );
    assert.equal(b("{not json", "application/json"), '"{not json"');
    assert.equal(b("12345678901234567890", "text/plain"), '"12345678901234567890"');
  });
});

test("a live SSE event renders its value without caching it: 1,000 events of 1 KB leave nothing in the JS heap", () => {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  // The payloads stay referenced, as a WeakMap's keys would be while a storage holds them.
  const live = (prefix: string) =>
    Array.from({ length: 1_000 }, (_, i) =>
      makeSample(`${prefix}/${i}`, "put", Buffer.from(`${i} ${"x".repeat(1_024)}`), "text/plain"),
    );
  // Rendered once before measuring, so that what compiling the path allocates is not counted.
  for (const s of live("warm")) codecA.sseEvent!(s);
  const samples = live("live");
  gc();
  const before = getHeapStatistics().used_heap_size;
  for (const s of samples) assert.match(codecA.sseEvent!(s).toString(), /^event: PUT\ndata: \{ "key": "live\//);
  gc();
  const grown = getHeapStatistics().used_heap_size - before;
  // A cached rendering per payload (a Map and a 1 KB string each) was 1.5 MB here.
  assert.ok(grown < 512 * 1024, `the JS heap grew by ${grown} bytes`);
});
