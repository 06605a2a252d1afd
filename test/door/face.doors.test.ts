/**
 * The zenoh face is one for both zenoh doors (src/door/face.ts, docs/architecture.md): each
 * behaviour here runs on the zenoh wire protocol (the suite's raw client) and on the remote API
 * (the real zenoh-ts client), against one router. These are the places where the two doors'
 * copies had drifted apart: admin-space permissions, `session_bound.key_exprs` and the refusal of a get
 * (key limits: face.test.ts).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { after, describe, test } from "node:test";
import type { Session as ZSession } from "@eclipse-zenoh/zenoh-ts";
import { silentLogger } from "../../src/core/log.js";
import { startZest, type Zest } from "../../src/runtime.js";
import type { ZestConfig } from "../../src/zest-config.js";
import { encodePush, encodeRequest } from "../../src/zenoh/codec/network.js";
import { collect, openClient, roundTrip } from "../remote/helpers.js";
import { RawClient } from "../zenoh/raw-client.js";
import { eventually } from "../support/wait.js";

/** What a test does through one door's client. */
interface Client {
  put(key: string, value: string, attachment?: string): Promise<void>;
  /** The replies of a get, as `key=value` or `err:<text>`. */
  get(selector: string): Promise<string[]>;
  /** `n` gets sent at once, without waiting; the replies of each. */
  burst(selector: string, n: number): Promise<string[][]>;
  close(): Promise<void>;
}

interface Door {
  name: string;
  open(z: Zest): Promise<Client>;
}

const wire = (suffix: string) => ({ scope: 0, suffix, senderMapping: false });

const zenohDoor: Door = {
  name: "zenoh wire protocol",
  async open(z) {
    const port = Number(z.zenohLocators[0]!.split(":").pop());
    const c = await RawClient.open(port, { zid: `AB${Math.floor(Math.random() * 0xffff).toString(16)}` });
    let nextId = 1;
    const get = async (selector: string): Promise<string[]> => {
      const id = nextId++;
      const [key, parameters = ""] = selector.split("?");
      c.sendFrame((w) => encodeRequest(w, { id, key: wire(key!), query: { consolidation: "none", parameters } }));
      await c.until(() => c.network.some((m) => m.kind === "responseFinal" && m.id === id) || undefined);
      return c.network.flatMap((m) => {
        if (m.kind !== "response" || m.id !== id) return [];
        return m.body.kind === "err"
          ? [`err:${Buffer.from(m.body.err.payload).toString()}`]
          : [`${m.key.suffix}=${m.body.push.kind === "put" ? Buffer.from(m.body.push.payload).toString() : ""}`];
      });
    };
    const burst = async (selector: string, n: number): Promise<string[][]> => {
      const first = nextId;
      nextId += n;
      for (let i = 0; i < n; i += 100)
        c.sendFrame(
          ...Array.from(
            { length: Math.min(100, n - i) },
            (_, j) => (w: Parameters<typeof encodeRequest>[0]) =>
              encodeRequest(w, {
                id: first + i + j,
                key: wire(selector),
                query: { consolidation: "none", parameters: "" },
              }),
          ),
        );
      await c.until(
        () =>
          c.network.filter((m) => m.kind === "responseFinal" && m.id >= first && m.id < first + n).length === n ||
          undefined,
        20_000,
      );
      const by = new Map<number, string[]>();
      for (const m of c.network)
        if (m.kind === "response" && m.id >= first && m.id < first + n)
          by.set(m.id, [...(by.get(m.id) ?? []), m.body.kind === "err" ? "err" : m.key.suffix]);
      return Array.from({ length: n }, (_, i) => by.get(first + i) ?? []);
    };
    return {
      burst,
      async put(key, value, attachment) {
        c.sendFrame((w) =>
          encodePush(w, wire(key), {
            kind: "put",
            encoding: "",
            hasEncoding: false,
            payload: Buffer.from(value),
            ...(attachment === undefined ? {} : { attachment: Buffer.from(attachment) }),
          }),
        );
        // The door handles a session's messages in order: a get's final follows the put.
        await get("face/sync/none");
      },
      get,
      close: async () => void c.close(),
    };
  },
};

const remoteDoor: Door = {
  name: "remote API",
  async open(z) {
    const s: ZSession = await openClient(z.remoteApiUrl!.replace("ws://", "ws/"));
    return {
      async put(key, value, attachment) {
        await s.put(key, value, attachment === undefined ? {} : { attachment });
        await roundTrip(s);
      },
      async get(selector) {
        return (await collect(await s.get(selector))).map((r) => r.replace(/^put:/, ""));
      },
      async burst(selector, n) {
        const receivers = await Promise.all(Array.from({ length: n }, () => s.get(selector)));
        return (await Promise.all(receivers.map((r) => collect(r)))).map((rs) =>
          rs.map((r) => (r.startsWith("err:") ? "err" : r.replace(/^put:/, "").split("=")[0]!)),
        );
      },
      close: () => s.close(),
    };
  },
};

const started: Zest[] = [];
after(async () => {
  for (const z of started.splice(0)) await z.close();
});

async function router(config: ZestConfig = {}): Promise<Zest> {
  const z = await startZest(
    {
      ...config,
      listen: { endpoints: ["tcp/127.0.0.1:0"] },
      scouting: { multicast: { enabled: false } },
      plugins: { rest: { http_port: "127.0.0.1:0" }, remote_api: { websocket_port: 0 }, ...config.plugins },
    },
    { logger: silentLogger },
  );
  started.push(z);
  return z;
}

const storageKey = (z: Zest, name: string) =>
  `@/router/${z.router.zid}/config/plugins/storage_manager/storages/${name}`;
const storageNames = (z: Zest) => z.manager.listStorages().map((s) => s.name);

for (const door of [zenohDoor, remoteDoor]) {
  describe(`the zenoh face on the ${door.name}`, () => {
    test("with --adminspace-permissions r, a put on the admin space creates no storage", async () => {
      const z = await router({ adminspace: { permissions: { read: true, write: false } } });
      const c = await door.open(z);
      try {
        await c.put(storageKey(z, "refused"), '{"key_expr":"refused/**","volume":"memory"}');
        await new Promise((r) => setTimeout(r, 100));
        assert.ok(!storageNames(z).includes("refused"), `storages: ${storageNames(z).join(", ")}`);
        // Reads stay allowed.
        const read = await c.get(`@/router/${z.router.zid}/config/plugins/storage_manager/storages/*`);
        assert.ok(!read.some((r) => r.startsWith("err:")), read.join("; "));
      } finally {
        await c.close();
      }
    });

    test("with the default permissions, a client on loopback creates a storage by a put on the admin space, as over REST", async () => {
      const z = await router();
      const c = await door.open(z);
      try {
        await c.put(storageKey(z, "made"), '{"key_expr":"made/**","volume":"memory"}');
        await eventually(() => storageNames(z).includes("made"), 3_000, "the storage");
      } finally {
        await c.close();
      }
    });

    test("with admin reads off, a get on the admin space is refused with the same reply", async () => {
      const z = await router({ adminspace: { permissions: { read: false, write: true } } });
      const c = await door.open(z);
      try {
        assert.deepEqual(await c.get(`@/router/${z.router.zid}/**`), [
          "err:forbidden: reading the admin space is disabled (--adminspace-permissions)",
        ]);
      } finally {
        await c.close();
      }
    });

    test("session_bound.key_exprs binds a put to the writer's session: the value goes when the client does", async () => {
      const z = await router({ session_bound: { key_exprs: ["presence/**"] } });
      const c = await door.open(z);
      await c.put("presence/me", "here");
      await c.put("kept/me", "stays");
      const reader = await door.open(z);
      try {
        assert.deepEqual(await reader.get("presence/**"), ["presence/me=here"]);
        await c.close();
        await eventually(() => z.manager.listStorages().length > 0, 1_000);
        const left = async () => (await reader.get("presence/**")).length;
        const end = Date.now() + 3_000;
        while ((await left()) > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(await reader.get("presence/**"), []);
        assert.deepEqual(await reader.get("kept/**"), ["kept/me=stays"]);
      } finally {
        await reader.close();
      }
    });

    test("a burst of 3,000 gets without waiting is answered whole: the client is held back, not refused", async () => {
      const z = await router();
      const answerer = z.session;
      answerer.declareQueryable(
        "burst/**",
        (q) =>
          new Promise<void>((resolve) =>
            setTimeout(() => {
              q.reply("burst/x", "x");
              resolve();
            }, 5),
          ),
      );
      const c = await door.open(z);
      try {
        const replies = await c.burst("burst/**", 3_000);
        const wrong = replies.filter((r) => r.length !== 1 || r[0] !== "burst/x");
        assert.equal(wrong.length, 0, `${wrong.length} gets answered otherwise, e.g. ${JSON.stringify(wrong[0])}`);
      } finally {
        await c.close();
      }
    });

    test("a get refused by access control gets the same error reply", async () => {
      const z = await router({
        access_control: {
          enabled: true,
          default_permission: "allow",
          rules: [{ id: "no", messages: ["query"], key_exprs: ["secret/**"], permission: "deny" }],
          subjects: [{ id: "all", cidrs: ["127.0.0.0/8"] }],
          policies: [{ rules: ["no"], subjects: ["all"] }],
        },
      });
      const c = await door.open(z);
      try {
        assert.deepEqual(await c.get("secret/**"), ["err:forbidden: an anonymous client may not query secret/**"]);
      } finally {
        await c.close();
      }
    });
  });
}
