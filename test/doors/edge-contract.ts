/**
 * The shared edge-policy tests (docs/adding-a-front-door.md): protected mode, access control,
 * connection caps and admin permissions, run against any front door through a small driver,
 * as `runStorageContract` runs the storage tests against any volume.
 */
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { describe, test } from "node:test";
import { hashSecret } from "../../src/access/hash.js";
import type { AnyFrontDoor } from "../../src/access/front-door.js";
import { silentLogger } from "../../src/core/log.js";
import { startZest, type Zest } from "../../src/runtime.js";
import type { ZestConfig } from "../../src/zest-config.js";
import { eventually } from "../support/wait.js";

/** A client of the door under test. Refusals reject with an Error whose message starts with the error kind. */
export interface DoorClient {
  put(key: string, value: string): Promise<void>;
  /** `key=value` for each reply. */
  get(keyExpr: string): Promise<string[]>;
  close(): Promise<void>;
}

/** How the contract drives one door. */
export interface DoorDriver {
  /** The door's name (`plugins.<name>`). */
  readonly name: string;
  /** Doors to register besides the built-in ones (a door from its own folder). */
  readonly doors?: AnyFrontDoor[];
  /** The `plugins` entries that turn the door on at `endpoint`, with `extra` keys in its section. */
  plugins?(endpoint: string | number, extra?: Record<string, unknown>): Record<string, unknown>;
  /**
   * For a door whose sections are not under `plugins` (the zenoh door's are at the root): the
   * whole configuration that turns it on at `endpoint` (0: the door's default), with `caps`
   * (`max_connections_per_address`), over `base`.
   */
  config?(endpoint: string | number, caps: { max_connections_per_address?: number }, base: ZestConfig): ZestConfig;
  /** Connects to `locator` (one of the door's), with a Bearer-style token if given. */
  connect(locator: string, token?: string): Promise<DoorClient>;
  /**
   * The door's writes have no answer (a zenoh PUSH): a refused put resolves, and the contract
   * checks that nothing was written instead of the error kind.
   */
  readonly silentWrites?: boolean;
}

/** Asserts a put through `client` is refused (`forbidden`): by its answer, or by its lack of effect. */
async function assertPutRefused(
  driver: DoorDriver,
  client: DoorClient,
  key: string,
  value: string,
  written: () => Promise<boolean>,
): Promise<void> {
  if (!driver.silentWrites) {
    assert.equal(await outcome(() => client.put(key, value)), "forbidden");
    return;
  }
  assert.equal(await outcome(() => client.put(key, value)), "ok");
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(await written(), false, `${key} was written`);
}

const hash = (s: string): string => hashSecret(s, { ln: 6 });
const ALICE = "alice.s3cret-token";

/** alice may put and query `demo/**`; anyone else nothing. */
const ACCESS = {
  enabled: true,
  default_permission: "deny",
  rules: [{ id: "demo", messages: ["put", "query"], key_exprs: ["demo/**"], permission: "allow" }],
  subjects: [{ id: "alice", usernames: ["alice"] }],
  policies: [{ rules: ["demo"], subjects: ["alice"] }],
  tokens: [{ id: "alice", user: "alice", token_hash: hash(ALICE) }],
} satisfies ZestConfig["access_control"];

/** "ok", or the error kind a refusal names (`forbidden`, `unauthenticated`...). */
async function outcome(f: () => Promise<unknown>): Promise<string> {
  try {
    await f();
    return "ok";
  } catch (err) {
    const m = /^(?:Error: )?([a-z_]+):/.exec(String((err as Error).message ?? err));
    return m ? m[1]! : `error: ${String(err)}`;
  }
}

/** The configuration that turns the driver's door on at `endpoint`, over `base`. */
function doorConfig(
  driver: DoorDriver,
  endpoint: string | number,
  extra: { max_connections_per_address?: number } = {},
  base: ZestConfig = {},
): ZestConfig {
  if (driver.config) return driver.config(endpoint, extra, base);
  return { ...base, plugins: driver.plugins!(endpoint, extra) };
}

async function start(driver: DoorDriver, config: ZestConfig): Promise<Zest> {
  return startZest(config, { logger: silentLogger, doors: driver.doors });
}

function locator(zest: Zest, name: string): string {
  const door = zest.doors.find((d) => d.name === name);
  assert.ok(door, `door ${name} is running`);
  return door.instance.locators()[0]!;
}

/** Host and port of a locator (`scheme://host:port`, or zenoh's `tcp/host:port`). */
function hostPort(loc: string): { host: string; port: number } {
  const u = new URL(loc.includes("://") ? loc : loc.replace("/", "://"));
  return { host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port) };
}

/** Resolves once the TCP connection is open, or rejects if it closes first. */
function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port });
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
}

/** Resolves true when `socket` is closed by the other side within `ms`. */
function closedWithin(socket: Socket, ms: number): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    socket.once("close", () => {
      clearTimeout(t);
      resolve(true);
    });
    socket.resume();
  });
}

/** Runs the edge-policy contract against the door `driver` drives. */
export function runEdgePolicyContract(driver: DoorDriver): void {
  describe(`edge policy on the ${driver.name} door`, () => {
    test("protected mode: with no access control and no interface given, the door listens on loopback only", async () => {
      const zest = await start(driver, doorConfig(driver, 0));
      try {
        const loc = locator(zest, driver.name);
        assert.equal(hostPort(loc).host, "127.0.0.1", loc);
        // And it serves there.
        const c = await driver.connect(loc);
        await c.put("demo/open", "1");
        await eventually(async () => (await c.get("demo/open")).includes("demo/open=1"), 5_000, "demo/open");
        await c.close();
      } finally {
        await zest.close();
      }
    });

    test("access control: an anonymous client is asked for credentials, a user may do what its rules allow and no more", async () => {
      const zest = await start(driver, doorConfig(driver, "127.0.0.1:0", {}, { access_control: ACCESS }));
      try {
        const loc = locator(zest, driver.name);
        assert.equal(await outcome(async () => (await driver.connect(loc)).put("demo/a", "x")), "unauthenticated");
        assert.equal(
          await outcome(async () => (await driver.connect(loc, "alice.wrong")).put("demo/a", "x")),
          "unauthenticated",
        );
        const alice = await driver.connect(loc, ALICE);
        try {
          assert.equal(await outcome(() => alice.put("demo/a", "1")), "ok");
          await eventually(async () => (await alice.get("demo/a")).includes("demo/a=1"), 5_000, "demo/a");
          await assertPutRefused(
            driver,
            alice,
            "other/a",
            "1",
            async () => (await zest.session.get("other/a")).length > 0,
          );
          assert.equal(await outcome(() => alice.get("other/a")), "forbidden");
        } finally {
          await alice.close();
        }
      } finally {
        await zest.close();
      }
    });

    test("caps: a connection over max_connections_per_address is closed at once; the others stay open", async () => {
      const zest = await start(driver, doorConfig(driver, "127.0.0.1:0", { max_connections_per_address: 2 }));
      const sockets: Socket[] = [];
      try {
        const { port } = hostPort(locator(zest, driver.name));
        sockets.push(await open(port), await open(port));
        const third = connect({ host: "127.0.0.1", port });
        third.on("error", () => undefined);
        sockets.push(third);
        assert.equal(await closedWithin(third, 3_000), true, "the third connection is closed");
        assert.equal(sockets[0]!.destroyed || sockets[1]!.destroyed, false, "the first two stay open");
        sockets[0]!.destroy();
        // A freed place is free again.
        await eventually(
          async () => {
            const again = await open(port);
            sockets.push(again);
            return !(await closedWithin(again, 300));
          },
          5_000,
          "a place freed",
        );
      } finally {
        for (const s of sockets) s.destroy();
        await zest.close();
      }
    });

    test("admin permissions: loopback clients may write the admin space by default; write and read can be turned off", async () => {
      const body = JSON.stringify({ key_expr: "edge/**", volume: "memory" });
      const zest = await start(driver, doorConfig(driver, "127.0.0.1:0"));
      try {
        const c = await driver.connect(locator(zest, driver.name));
        const key = `@/router/${zest.router.zid}/config/plugins/storage_manager/storages/edge`;
        assert.equal(await outcome(() => c.put(key, body)), "ok");
        await eventually(() => zest.manager.listStorages().some((s) => s.name === "edge"), 5_000, "storage edge");
        await c.close();
      } finally {
        await zest.close();
      }
      const closed = await start(
        driver,
        doorConfig(driver, "127.0.0.1:0", {}, { adminspace: { permissions: { read: false, write: false } } }),
      );
      try {
        const c = await driver.connect(locator(closed, driver.name));
        const key = `@/router/${closed.router.zid}/config/plugins/storage_manager/storages/edge`;
        await assertPutRefused(driver, c, key, body, async () =>
          closed.manager.listStorages().some((s) => s.name === "edge"),
        );
        assert.equal(await outcome(() => c.get(`@/router/${closed.router.zid}`)), "forbidden");
        assert.equal(
          closed.manager.listStorages().some((s) => s.name === "edge"),
          false,
        );
        await c.close();
      } finally {
        await closed.close();
      }
    });
  });
}
