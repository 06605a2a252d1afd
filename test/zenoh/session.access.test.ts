/**
 * Access control on the zenoh door (src/zenoh/session.ts, docs/security.md): each session is
 * decided as an anonymous client of its address, message by message, as REST and the remote API
 * decide theirs.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { AccessControl } from "../../src/access/access.js";
import type { Sample } from "../../src/core/sample.js";
import { encodeDeclare, encodePush, encodeRequest } from "../../src/zenoh/codec/network.js";
import { CloseReason } from "../../src/zenoh/codec/transport.js";
import { RawClient, wireKey, wirePut } from "./raw-client.js";
import { type TestZenohDoor, zenohDoor } from "../support/zenoh-door.js";

const opened: Array<{ close(): unknown }> = [];
after(async () => {
  for (const o of opened.reverse()) await o.close();
});

function door(section: unknown): Promise<TestZenohDoor> {
  return zenohDoor(opened, { access: AccessControl.fromConfig(section) });
}

const key = wireKey;
const put = (payload: string) => wirePut(payload);

const LOOPBACK_MAY_WRITE_DEMO = {
  enabled: true,
  default_permission: "deny",
  rules: [
    { id: "demo", messages: ["put", "query", "declare_subscriber"], key_exprs: ["demo/**"], permission: "allow" },
  ],
  subjects: [{ id: "local", cidrs: ["127.0.0.0/8"] }],
  policies: [{ rules: ["demo"], subjects: ["local"] }],
};

test("a session's puts, gets and subscribers are decided by access control on its address", async () => {
  const { port, session } = await door(LOOPBACK_MAY_WRITE_DEMO);
  const got: Sample[] = [];
  session.declareSubscriber("**", (s) => void got.push(s));
  session.declareQueryable("**", (q) => q.reply(q.key.replace("**", "x"), "answer"));
  const c = await RawClient.open(port);
  opened.push(c);
  c.sendFrame(
    (w) => encodePush(w, key("secret/a"), put("no")),
    (w) => encodePush(w, key("demo/a"), put("yes")),
    (w) => encodeRequest(w, { id: 1, key: key("secret/**"), query: { consolidation: "none", parameters: "" } }),
    (w) => encodeRequest(w, { id: 2, key: key("demo/**"), query: { consolidation: "none", parameters: "" } }),
    (w) => encodeDeclare(w, { kind: "subscriber", id: 1, key: key("secret/**") }),
    (w) => encodeDeclare(w, { kind: "subscriber", id: 2, key: key("demo/**") }),
  );
  await c.until(() => c.network.filter((m) => m.kind === "responseFinal").length === 2 || undefined);
  assert.deepEqual(
    got.map((s) => s.key),
    ["demo/a"],
  );
  const refused = c.network.find((m) => m.kind === "response" && m.id === 1);
  assert.ok(refused?.kind === "response" && refused.body.kind === "err");
  assert.match(refused.body.err.payload.toString(), /^forbidden: /);
  const answered = c.network.find((m) => m.kind === "response" && m.id === 2);
  assert.ok(answered?.kind === "response" && answered.body.kind === "reply");
  await session.put("secret/b", "hidden");
  await session.put("demo/b", "shown");
  await c.until(() => c.network.some((m) => m.kind === "push" && m.key.suffix === "demo/b") || undefined);
  assert.ok(!c.network.some((m) => m.kind === "push" && m.key.suffix === "secret/b"));
});

test("an address access control allows nothing is refused at connect", async () => {
  const { port } = await door({ enabled: true, default_permission: "deny" });
  const c = await RawClient.connect(port);
  opened.push(c);
  await c.waitClosed();
  const close = c.transport.find((t) => t.kind === "close");
  assert.ok(close?.kind === "close" && close.reason === CloseReason.GENERIC);
});
