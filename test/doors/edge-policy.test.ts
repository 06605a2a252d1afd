/**
 * Every front door passes the same edge-policy tests (edge-contract.ts): the REST gateway, the
 * remote API, and a small line-based door registered from its own folder with one line
 * (`doors: [lineDoor]`).
 */
import { Buffer } from "node:buffer";
import { mkdtempSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Config, open, ReplyError } from "@eclipse-zenoh/zenoh-ts";
import { WebSocket } from "ws";
import { runEdgePolicyContract } from "./edge-contract.js";
import { lineDoor } from "./line/door.js";
import { encodePush, encodeRequest } from "../../src/zenoh/codec/network.js";
import { RawClient } from "../zenoh/raw-client.js";

const KINDS: Readonly<Record<number, string>> = { 400: "bad_input", 401: "unauthenticated", 403: "forbidden" };

runEdgePolicyContract({
  name: "rest",
  plugins: (endpoint, extra) => ({ rest: { http_port: endpoint, ...extra } }),
  async connect(loc, token) {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    const check = async (r: Response): Promise<Response> => {
      if (r.ok) return r;
      throw new Error(`${KINDS[r.status] ?? `status ${r.status}`}: ${(await r.text()).trim()}`);
    };
    return {
      async put(key, value) {
        await check(
          await fetch(`${loc}/${key}`, {
            method: "PUT",
            headers: { ...headers, "content-type": "application/json" },
            body: value,
          }),
        );
      },
      async get(ke) {
        const r = await check(await fetch(`${loc}/${ke}`, { headers }));
        const entries = (await r.json()) as Array<{ key: string; value: unknown }>;
        return entries.map((e) => `${e.key}=${typeof e.value === "string" ? e.value : JSON.stringify(e.value)}`);
      },
      close: async () => undefined,
    };
  },
});

/** The HTTP status a WebSocket upgrade with `token` gets (101 when it is accepted). */
function upgradeStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.once("open", () => {
      ws.close();
      resolve(101);
    });
    ws.once("unexpected-response", (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.once("error", () => resolve(0));
  });
}

runEdgePolicyContract({
  name: "remote_api",
  plugins: (endpoint, extra) => ({ rest: { http_port: "none" }, remote_api: { websocket_port: endpoint, ...extra } }),
  async connect(loc, token) {
    const query = token ? `?token=${token}` : "";
    const status = await upgradeStatus(`${loc}/${query}`);
    if (status !== 101) throw new Error(`${KINDS[status] ?? `status ${status}`}: the upgrade was refused`);
    const { log, warn } = console;
    console.log = console.warn = () => undefined;
    const session = await open(new Config(`${loc.replace("ws://", "ws/")}${query}`)).finally(() => {
      console.log = log;
      console.warn = warn;
    });
    return {
      async put(key, value) {
        const p = await session.declarePublisher(key);
        await p.put(value);
        await p.undeclare();
        await session.newTimestamp(); // a round trip: the put was handled
      },
      async get(ke) {
        const out: string[] = [];
        const replies = await session.get(ke);
        for await (const r of replies ?? []) {
          const res = r.result();
          if (res instanceof ReplyError) throw new Error(res.payload().toString());
          out.push(`${res.keyexpr().toString()}=${res.payload().toString()}`);
        }
        return out;
      },
      close: () => session.close(),
    };
  },
});

runEdgePolicyContract({
  name: "line",
  doors: [lineDoor],
  plugins: (endpoint, extra) => ({ rest: { http_port: "none" }, line: { port: endpoint, ...extra } }),
  async connect(loc, token) {
    const u = new URL(loc);
    const socket = connect({ host: u.hostname, port: Number(u.port) });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    socket.setEncoding("utf8");
    let buffered = "";
    // Lines not yet read, and readers waiting for a line: one of the two is always empty.
    const lines: string[] = [];
    const waiting: Array<(line: string) => void> = [];
    socket.on("data", (chunk: string) => {
      buffered += chunk;
      let nl = buffered.indexOf("\n");
      while (nl !== -1) {
        const l = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        const reader = waiting.shift();
        if (reader) reader(l);
        else lines.push(l);
        nl = buffered.indexOf("\n");
      }
    });
    const line = (): Promise<string> => {
      const l = lines.shift();
      return l !== undefined ? Promise.resolve(l) : new Promise((resolve) => waiting.push(resolve));
    };
    const ask = async (command: string): Promise<string> => {
      const answer = line();
      socket.write(`${command}\n`);
      const first = await answer;
      if (first.startsWith("ERR ")) throw new Error(first.slice(4));
      return first;
    };
    if (token) await ask(`AUTH ${token}`);
    return {
      async put(key, value) {
        await ask(`PUT ${key} ${value.replace(/\n/g, " ")}`);
      },
      async get(ke) {
        const out: string[] = [];
        for (let l = await ask(`GET ${ke}`); l !== "END"; l = await line()) {
          const [, key, ...value] = l.split(" ");
          out.push(`${key}=${value.join(" ")}`);
        }
        return out;
      },
      close: async () => {
        socket.destroy();
      },
    };
  },
});

/** The zenoh door's users for the contract: its token `user.secret` is zenoh's user and password. */
function usrpwdFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "zest-edge-zenoh-"));
  const file = join(dir, "users.txt");
  writeFileSync(file, "alice:s3cret-token\n");
  return file;
}

const wire = (suffix: string) => ({ scope: 0, suffix, senderMapping: false });

runEdgePolicyContract({
  name: "zenoh",
  silentWrites: true,
  config: (endpoint, caps, base) => ({
    ...base,
    plugins: { rest: { http_port: "none" } },
    scouting: { multicast: { enabled: false } },
    ...(endpoint === 0 ? {} : { listen: { endpoints: [`tcp/${endpoint}`] } }),
    transport: {
      ...(caps.max_connections_per_address === undefined
        ? {}
        : { unicast: { max_sessions_per_address: caps.max_connections_per_address } }),
      // With access control, the users authenticate in the handshake (zenoh's user/password).
      ...(base.access_control ? { auth: { usrpwd: { dictionary_file: usrpwdFile() } } } : {}),
    },
  }),
  async connect(loc, token) {
    const port = Number(loc.split(":").pop());
    const dot = token?.indexOf(".") ?? -1;
    const credentials = token === undefined ? undefined : { user: token.slice(0, dot), password: token.slice(dot + 1) };
    let c: RawClient;
    try {
      c = await RawClient.open(port, credentials ? { credentials } : {});
    } catch (err) {
      // zenoh refuses a session in its handshake: with user/password configured, that is a matter of credentials.
      throw new Error(`unauthenticated: the handshake was refused (${(err as Error).message})`);
    }
    let nextId = 1;
    const get = async (ke: string): Promise<string[]> => {
      const id = nextId++;
      c.sendFrame((w) => encodeRequest(w, { id, key: wire(ke), query: { consolidation: "none", parameters: "" } }));
      await c.until(() => c.network.some((m) => m.kind === "responseFinal" && m.id === id) || undefined);
      const out: string[] = [];
      for (const m of c.network) {
        if (m.kind !== "response" || m.id !== id) continue;
        if (m.body.kind === "err") throw new Error(Buffer.from(m.body.err.payload).toString());
        if (m.body.push.kind === "put") out.push(`${m.key.suffix}=${Buffer.from(m.body.push.payload).toString()}`);
      }
      return out;
    };
    return {
      async put(key, value) {
        c.sendFrame((w) =>
          encodePush(w, wire(key), { kind: "put", encoding: "", hasEncoding: false, payload: Buffer.from(value) }),
        );
        // The door handles a session's messages in order: the put was handled once a later get ends.
        await get("edge/sync/none").catch(() => undefined);
      },
      get,
      close: async () => void c.close(),
    };
  },
});
