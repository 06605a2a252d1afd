import assert from "node:assert/strict";
import { test } from "node:test";
import type { Fabric, FabricHost } from "../../src/core/fabric.js";
import { silentLogger } from "../../src/core/log.js";
import type { Reply } from "../../src/core/reply.js";
import { Router } from "../../src/core/router.js";
import { Parameters } from "../../src/core/selector.js";
import { Session } from "../../src/core/session.js";
import { StorageService } from "../../src/storage/service.js";
import { MemoryBackend } from "../../src/storage/volumes/memory.js";

/** What a test compares: key, value, time. */
function view(replies: readonly Reply[] | undefined): string[] | undefined {
  return replies?.map((r) =>
    r.kind === "ok" ? `${r.sample.key}=${r.sample.payload.toString()}@${r.sample.timestamp?.toString()}` : `err`,
  );
}

async function storage(session: Session, name: string, keyExpr: string): Promise<StorageService> {
  const s = new StorageService(name, keyExpr, new MemoryBackend(name), session, silentLogger);
  await s.start({ align: false });
  return s;
}

test("readStored answers a plain key from local memory storages exactly as the query does", async () => {
  const router = new Router({ zid: "01" });
  const s = new Session(router);
  const a = await storage(s, "a", "r/**");
  const b = await storage(s, "b", "r/x/*");
  await s.put("r/x/k", "one");
  await s.put("r/y", "two");
  for (const key of ["r/x/k", "r/y", "r/none", "q/outside"]) {
    assert.deepEqual(view(router.readStored(key)), view(await s.get(key)), key);
  }
  // A newer value held by only one of two storages (the other missed it) wins, as in the query.
  await s.put("r/x/k", "newer");
  assert.equal(view(router.readStored("r/x/k"))![0]!.split("@")[0], "r/x/k=newer");
  await s.delete("r/y");
  assert.deepEqual(router.readStored("r/y"), []);
  await a.stop(false);
  await b.stop(false);
});

test("readStored declines wild keys, non-storage answerers and storages that cannot peek", async () => {
  const router = new Router({ zid: "01" });
  const s = new Session(router);
  await storage(s, "a", "r/**");
  await s.put("r/k", "v");
  assert.equal(router.readStored("r/*"), undefined);
  assert.ok(router.readStored("r/k")); // remembered: the declarations below must make it forget
  const evalQ = s.declareQueryable("r/k", (q) => q.reply("r/k", "computed"));
  assert.equal(router.readStored("r/k"), undefined);
  evalQ.undeclare();
  assert.ok(router.readStored("r/k"));
  const opaque = s.declareQueryable("r/**", () => undefined, { complete: true, storage: true });
  assert.equal(router.readStored("r/k"), undefined);
  opaque.undeclare();
  const local = s.declareQueryable("r/**", () => undefined, {
    storage: true,
    peek: () => null,
    allowedOrigin: "session_local",
  });
  assert.equal(router.readStored("r/k"), undefined);
  local.undeclare();
  assert.equal(view(router.readStored("r/k"))!.length, 1);
});

/** A fabric that only hands over the router's host, to call what other routers' queries reach. */
function captureHost(): { fabric: Fabric; host: () => FabricHost } {
  let host: FabricHost | undefined;
  const fabric: Fabric = {
    start: async (h) => {
      host = h;
    },
    publish: async () => undefined,
    query: async () => undefined,
    declarationsChanged: () => undefined,
    status: () => ({ kind: "test", connected: true }),
    isConnected: () => true,
    close: async () => undefined,
  };
  return {
    fabric,
    host: () => {
      if (!host) throw new Error("not started");
      return host;
    },
  };
}

test("readRemote reads another router's default query exactly as answerRemote replies, storage by storage", async () => {
  const { fabric, host } = captureHost();
  const router = new Router({ zid: "01", fabric });
  await router.start();
  const s = new Session(router);
  const a = await storage(s, "a", "r/**");
  const b = await storage(s, "b", "r/x/*");
  await s.put("r/x/k", "one");
  await s.put("r/y", "two");
  const answered = async (key: string): Promise<string[]> => {
    const replies: Reply[] = [];
    await host().answerRemote({ key, parameters: new Parameters("") }, 1_000, (r) => replies.push(r));
    return view(replies)!.sort();
  };
  for (const key of ["r/x/k", "r/y", "r/none", "q/outside"]) {
    const read = host().readRemote?.(key);
    assert.ok(read, key);
    // Unconsolidated, like the queries it stands for: the asking router consolidates.
    assert.deepEqual(view(read)!.sort(), await answered(key), key);
  }
  assert.equal(host().readRemote?.("r/x/k")?.length, 2);
  // Wild keys, non-storage answerers and keys over the limits go through the query.
  assert.equal(host().readRemote?.("r/*"), undefined);
  const evalQ = s.declareQueryable("r/k", (q) => q.reply("r/k", "computed"));
  assert.equal(host().readRemote?.("r/k"), undefined);
  evalQ.undeclare();
  assert.ok(host().readRemote?.("r/k"));
  assert.equal(host().readRemote?.(`r/${"x".repeat(100_000)}`), undefined);
  // A router on a fabric still runs local GETs as queries (other routers may hold the key).
  assert.equal(router.readStored("r/y"), undefined);
  await a.stop(false);
  await b.stop(false);
  await router.close();
});
