import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { renderValueJson } from "../../src/rest/render-value.js";
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
