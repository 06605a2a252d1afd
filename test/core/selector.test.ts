import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Parameters } from "../../src/core/selector.js";

describe("selector parameters", () => {
  test("the parenthesised form keeps values that hold parentheses, like now()", () => {
    const p = new Parameters("(starttime=now()-30m;stoptime=now()-10m)");
    assert.equal(p.get("starttime"), "now()-30m");
    assert.equal(p.get("stoptime"), "now()-10m");
  });

  test("all three forms, percent-decoding and first-wins", () => {
    assert.equal(new Parameters("(name=Bob;x=1)").get("x"), "1");
    assert.equal(new Parameters("name=Bob&x=1").get("name"), "Bob");
    assert.equal(new Parameters("name=Bob;x=1").get("x"), "1");
    assert.equal(new Parameters("name=B%C3%B6b&name=other").get("name"), "Böb");
    assert.equal(new Parameters("%28name=Bob%29").get("name"), "Bob");
    assert.equal(new Parameters("_time=[now(-1h);30m]&x=2").get("_time"), "[now(-1h);30m]");
    assert.equal(new Parameters("_time=[now(-1h);30m]&x=2").get("x"), "2");
  });

  test("_time is parsed once per selector: every storage a query reaches reads the same now()", async () => {
    const p = new Parameters("_time=[now(-1s)..now()]");
    const first = p.timeRange();
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(p.timeRange(), first, "the same range object, not a second parse with a later now()");
    assert.equal(new Parameters("x=1").timeRange(), undefined);
    const bad = new Parameters("_time=[yesterday..]");
    for (let i = 0; i < 2; i++)
      assert.throws(
        () => bad.timeRange(),
        (e: Error & { kind?: string }) => e.kind === "bad_input",
      );
  });

  test("an unclosed parenthesis is a 400", () => {
    assert.throws(
      () => new Parameters("(name=Bob"),
      (e: Error & { kind?: string }) => e.kind === "bad_input",
    );
  });
});

describe("selector parameters: form decoding", () => {
  test("in the & form a + is a space, and %2B a plus", () => {
    assert.equal(new Parameters("name=Bob+Smith").get("name"), "Bob Smith");
    assert.equal(new Parameters("x=1&full+name=Bob+Smith").get("full name"), "Bob Smith");
    assert.equal(new Parameters("name=a%2Bb").get("name"), "a+b");
    assert.equal(new Parameters("_time=[now(-1h)..]&name=Bob+Smith").get("name"), "Bob Smith");
  });
});
