import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Liveliness } from "../../src/core/liveliness.js";
import { silentLogger } from "../../src/core/log.js";
import type { Sample } from "../../src/core/sample.js";

const show = (s: Sample): string => `${s.kind}:${s.key}`;

describe("liveliness tokens of this router and of other routers", () => {
  test("a key is alive while any router holds it: one PUT, one DELETE when the last holder goes", () => {
    let announced = 0;
    const l = new Liveliness(silentLogger, () => announced++);
    const events: string[] = [];
    l.addSubscriber("a/**", (s) => events.push(show(s)), false);
    l.remoteChanged("R1", ["a/x"], []);
    l.addToken("a/x");
    l.remoteChanged("R2", ["a/x", "a/y"], []);
    assert.deepEqual(events, ["put:a/x", "put:a/y"]);
    assert.deepEqual(l.aliveKeys("**"), ["a/x", "a/y"]);
    assert.deepEqual(l.localKeys(), ["a/x"]);
    assert.equal(announced, 1, "only this router's own tokens are announced");
    l.removeToken("a/x");
    l.remoteChanged("R1", [], ["a/x"]);
    assert.deepEqual(events, ["put:a/x", "put:a/y"], "R2 still holds a/x");
    assert.equal(announced, 2);
    // R2 forgotten: everything it held goes.
    l.remoteChanged("R2", [], ["a/x", "a/y"]);
    assert.deepEqual(events, ["put:a/x", "put:a/y", "delete:a/x", "delete:a/y"]);
    assert.deepEqual(l.aliveKeys("**"), []);
    // Repeated or unknown reports change nothing.
    l.remoteChanged("R3", ["b"], []);
    l.remoteChanged("R3", ["b"], []);
    l.remoteChanged("R4", [], ["b"]);
    assert.deepEqual(l.aliveKeys("**"), ["b"]);
  });

  test("history includes other routers' tokens", () => {
    const l = new Liveliness(silentLogger);
    l.remoteChanged("R1", ["h/1"], []);
    l.addToken("h/2");
    const events: string[] = [];
    l.addSubscriber("h/*", (s) => events.push(show(s)), true);
    assert.deepEqual(events, ["put:h/1", "put:h/2"]);
  });
});
