/**
 * `withSampleExtras` (src/core/sample.ts): what a put's attachment and QoS make of its sample.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Qos } from "../../src/core/qos.js";
import { makeSample, withSampleExtras } from "../../src/core/sample.js";
import { Timestamp } from "../../src/core/timestamp.js";

const ts = new Timestamp(1n << 40n, "0A0B");
const qos = { priority: 2, congestionControl: "block", express: true } as unknown as Qos;

test("without extras the sample itself is returned", () => {
  const s = makeSample("a/b", "put", "v", "text/plain", ts);
  assert.equal(withSampleExtras(s, {}), s);
});

test("extras are added to a copy, every field of the sample kept", () => {
  const s = makeSample("a/b", "put", "v", "text/plain", ts);
  const attachment = Buffer.from("att");
  assert.deepEqual(withSampleExtras(s, { attachment, qos }), {
    key: "a/b",
    kind: "put",
    payload: Buffer.from("v"),
    encoding: "text/plain",
    timestamp: ts,
    attachment,
    qos,
  });
  assert.deepEqual(Object.keys(withSampleExtras(s, { qos })), [
    "key",
    "kind",
    "payload",
    "encoding",
    "timestamp",
    "qos",
  ]);
  assert.equal("timestamp" in withSampleExtras(makeSample("a", "delete", "", "", undefined), { qos }), false);
  assert.equal(s.qos, undefined, "the sample given is not changed");
});

test("the sample's own attachment and QoS stay unless the extras give others", () => {
  const own = withSampleExtras(makeSample("k", "put", "v", "text/plain", ts), { attachment: Buffer.from("old"), qos });
  const other = { ...qos, priority: 6 } as Qos;
  const kept = withSampleExtras(own, { qos: other });
  assert.deepEqual(kept.attachment, Buffer.from("old"));
  assert.equal(kept.qos, other);
  const replaced = withSampleExtras(own, { attachment: Buffer.alloc(0) });
  assert.deepEqual(replaced.attachment, Buffer.alloc(0), "an empty attachment is an attachment");
  assert.equal(replaced.qos, qos);
});
