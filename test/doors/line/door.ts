/**
 * A small front door for the tests (docs/adding-a-front-door.md): a line-based protocol over
 * TCP, registered with one line (`doors: [lineDoor]`) and built only on the contract and the
 * shared edge policy. One command per line, one answer per command:
 *
 *   AUTH <user:password | token>   → OK
 *   PUT <key> <value>              → OK
 *   GET <key expression>           → VALUE <key> <value> lines, then END
 *   anything refused               → ERR <kind>: <reason>
 */
import { Buffer } from "node:buffer";
import { createServer, type Socket } from "node:net";
import { z } from "zod";
import type { Principal } from "../../../src/access/access.js";
import { checkAdminRead, checkAdminWrite } from "../../../src/access/admin-permissions.js";
import { authorizationOf, isLoopbackAddress } from "../../../src/access/client.js";
import type { EdgePolicy } from "../../../src/access/edge-policy.js";
import type { FrontDoor } from "../../../src/access/front-door.js";
import { endpointSchema, listen, parseEndpoint } from "../../../src/access/listen.js";
import { closed } from "../../../src/config/schema.js";
import { toZestError, ZestError } from "../../../src/core/errors.js";
import type { Session } from "../../../src/core/session.js";
import { KeyExpr } from "../../../src/keyexpr/index.js";

const TITLE = "line door";
/** Longest command line: anything longer is refused and the connection closed. */
const MAX_LINE = 64 * 1024;

export const lineSchema = closed(
  {
    port: endpointSchema("line door port").optional().describe("where it listens (off when absent)"),
    max_connections_per_address: z.number().int().positive().optional().describe("connections per client address"),
    max_connections: z.number().int().positive().optional().describe("connections in all"),
  },
  "a line-based TCP door (tests)",
);

export const lineDoor: FrontDoor<"line", typeof lineSchema> = {
  name: "line",
  title: TITLE,
  schema: lineSchema,
  async start(ctx) {
    if (ctx.config.port === undefined) return undefined;
    const endpoint = parseEndpoint(ctx.config.port, "line door port")!;
    const host = ctx.edge.bindHost({ title: TITLE, openHint: "plugins.line.port 0.0.0.0:<port>" }, endpoint);
    const guard = ctx.edge.connectionGuard({
      perAddress: ctx.config.max_connections_per_address,
      total: ctx.config.max_connections,
    });
    let requests = 0;
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      const conn = new LineConnection(socket, ctx.openSession("line"), ctx.edge, () => requests++);
      socket.once("close", () => {
        sockets.delete(socket);
        conn.close();
      });
    });
    guard.attach(server);
    const addr = await listen(server, endpoint.port, host, TITLE);
    const url = `tcp://${addr.address}:${addr.port}`;
    return {
      locators: () => [url],
      status: () => ({ port: addr.port }),
      counters: () => ({ connections: guard.open, refused: guard.refused, requests }),
      close: async () => {
        for (const s of sockets) s.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  },
};

/** One client: its principal, its session, and the commands it sends. */
class LineConnection {
  private principal: Principal | Promise<Principal>;
  private buffered = "";
  private chain: Promise<void> = Promise.resolve();
  private readonly loopback: boolean;
  private readonly address: string;

  constructor(
    private readonly socket: Socket,
    private readonly session: Session,
    private readonly edge: EdgePolicy,
    private readonly counted: () => void,
  ) {
    this.address = socket.remoteAddress ?? "";
    this.loopback = isLoopbackAddress(this.address);
    this.principal = edge.access.authenticate({ authorization: undefined, address: this.address });
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => this.onData(chunk));
    socket.on("error", () => socket.destroy());
  }

  close(): void {
    this.session.close();
  }

  private onData(chunk: string): void {
    this.buffered += chunk;
    if (this.buffered.length > MAX_LINE && !this.buffered.includes("\n")) {
      this.socket.end("ERR too_large: a line is at most 65536 bytes\n");
      return;
    }
    let nl = this.buffered.indexOf("\n");
    while (nl !== -1) {
      const line = this.buffered.slice(0, nl).replace(/\r$/, "");
      this.buffered = this.buffered.slice(nl + 1);
      // Answers go out in command order.
      this.chain = this.chain.then(() => this.answer(line));
      nl = this.buffered.indexOf("\n");
    }
  }

  private async answer(line: string): Promise<void> {
    this.counted();
    let out: string;
    try {
      out = await this.command(line);
    } catch (err) {
      // This door's wire for errors: the kind, then the reason (its own mapping, in one place).
      const z = toZestError(err);
      out = `ERR ${z.kind}: ${z.message.replace(/\n/g, " ")}\n`;
    }
    if (!this.socket.destroyed) this.socket.write(out);
  }

  private async command(line: string): Promise<string> {
    const space = line.indexOf(" ");
    const verb = (space === -1 ? line : line.slice(0, space)).toUpperCase();
    const rest = space === -1 ? "" : line.slice(space + 1);
    const access = this.edge.access;
    switch (verb) {
      case "AUTH": {
        this.principal = access.authenticate({ authorization: authorizationOf(rest), address: this.address });
        await this.principal;
        return "OK\n";
      }
      case "PUT": {
        const sp = rest.indexOf(" ");
        const key = keyOf(sp === -1 ? rest : rest.slice(0, sp));
        checkAdminWrite(this.edge.admin, key, this.loopback);
        const p = await this.principal;
        if (access.decide(p, "put", key) !== "allow") throw access.refusal(p, `put ${key}`);
        await this.session.put(key, Buffer.from(sp === -1 ? "" : rest.slice(sp + 1)));
        return "OK\n";
      }
      case "GET": {
        const key = keyOf(rest);
        checkAdminRead(this.edge.admin, key);
        const p = await this.principal;
        const decision = access.decide(p, "query", key);
        if (decision === "deny") throw access.refusal(p, `query ${key}`);
        let out = "";
        for (const r of await this.session.get(key)) {
          if (r.kind !== "ok") continue;
          if (decision === "partial" && !access.mayRead(p, "query", r.sample.key)) continue;
          out += `VALUE ${r.sample.key} ${Buffer.from(r.sample.payload).toString("utf8")}\n`;
        }
        return `${out}END\n`;
      }
      default:
        throw ZestError.badRequest(`unknown command "${verb.slice(0, 16)}": AUTH, PUT or GET`);
    }
  }
}

function keyOf(text: string): string {
  if (text === "") throw ZestError.badRequest("a key expression is needed");
  return KeyExpr.autocanonize(text).toString();
}
