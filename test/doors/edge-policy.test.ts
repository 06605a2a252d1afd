/**
 * Every front door passes the same edge-policy tests (edge-contract.ts): the REST gateway, the
 * remote API, and a small line-based door registered from its own folder with one line
 * (`doors: [lineDoor]`).
 */
import { connect } from "node:net";
import { Config, open, ReplyError } from "@eclipse-zenoh/zenoh-ts";
import { WebSocket } from "ws";
import { runEdgePolicyContract } from "./edge-contract.js";
import { lineDoor } from "./line/door.js";

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
