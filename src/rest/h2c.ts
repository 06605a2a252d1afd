/**
 * HTTP/2 with prior knowledge (`h2c`) on the plain port (docs/http2.md, "On the plain port").
 * Nothing is put in front of HTTP/1.1: Node's HTTP/1.1 parser stops on the HTTP/2 preface
 * (`PRI * HTTP/2.0`, `HPE_PAUSED_H2_UPGRADE`) and the server's `clientError` gets the socket with
 * the bytes read. The socket is then detached from the HTTP/1.1 server, as Node's own upgrade
 * path does (its parser freed, its listeners removed), the bytes are put back, and the socket is
 * handed to an `http2` server that serves the same handlers.
 */
import type { Buffer } from "node:buffer";
import type { Server } from "node:http";
import type { Http2Server } from "node:http2";
import { createRequire } from "node:module";
import type { Socket } from "node:net";

/** The listeners the HTTP/1.1 server puts on each socket (Node's names), removed on the hand-over. */
const HTTP1_LISTENERS: ReadonlyArray<readonly [string, string]> = [
  ["data", "bound socketOnData"],
  ["end", "bound socketOnEnd"],
  ["close", "bound socketOnClose"],
  ["drain", "bound socketOnDrain"],
  ["timeout", "socketOnTimeout"],
  ["resume", "onSocketResume"],
  ["pause", "onSocketPause"],
];

/** Node's answers to a request its parser refused (what it sends when no `clientError` listener is set). */
const REFUSALS: ReadonlyMap<string, string> = new Map([
  ["HPE_HEADER_OVERFLOW", "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n"],
  ["HPE_CHUNK_EXTENSIONS_OVERFLOW", "HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\n\r\n"],
  ["ERR_HTTP_REQUEST_TIMEOUT", "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n"],
]);
const BAD_REQUEST = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n";

type FreeParser = (parser: unknown, req: unknown, socket: Socket) => void;

/**
 * Node's release of a socket's HTTP/1.1 parser (used by its upgrade path): it stops the parser
 * reading the socket and takes it out of the headers-timeout checks. Undefined if a Node version
 * no longer has it; the preface is then refused, as without h2c.
 */
const freeParser: FreeParser | undefined = (() => {
  try {
    const common = createRequire(import.meta.url)("_http_common") as { freeParser?: unknown };
    return typeof common.freeParser === "function" ? (common.freeParser as FreeParser) : undefined;
  } catch {
    return undefined;
  }
})();

/** A socket as the HTTP/1.1 server leaves it, with its parser and the response it is sending. */
type ParsedSocket = Socket & { parser?: unknown; _httpMessage?: { _headerSent?: boolean } | null };

/** Parser errors as `clientError` receives them. */
type ClientError = Error & { code?: string; rawPacket?: Buffer };

/** Serves HTTP/2 with prior knowledge on `server`'s port through `h2`. */
export class H2cHandOver {
  /** Sockets handed over: the HTTP/1.1 server no longer knows them, so `close` ends them here. */
  private readonly sockets = new Set<Socket>();

  constructor(
    server: Server,
    private readonly h2: Http2Server,
  ) {
    server.on("clientError", (err: ClientError, socket: Socket) => this.onClientError(err, socket));
  }

  /** HTTP/2 connections open on the plain port. */
  get size(): number {
    return this.sockets.size;
  }

  private onClientError(err: ClientError, socket: ParsedSocket): void {
    if (err.code === "HPE_PAUSED_H2_UPGRADE" && err.rawPacket !== undefined && this.handOver(socket, err.rawPacket))
      return;
    // What Node does without a listener: a short answer unless a response is on its way out
    // (its head already sent), then close.
    if (socket.writable && !socket._httpMessage?._headerSent) socket.write(REFUSALS.get(err.code ?? "") ?? BAD_REQUEST);
    socket.destroy();
  }

  private handOver(socket: ParsedSocket, head: Buffer): boolean {
    if (freeParser === undefined || socket.parser == null) return false;
    freeParser(socket.parser, undefined, socket);
    for (const [event, name] of HTTP1_LISTENERS)
      for (const l of socket.listeners(event)) if (l.name === name) socket.removeListener(event, l as () => void);
    // Not flowing (with no `data` listener left, bytes would be dropped): the HTTP/2 session
    // reads what is put back first, then the socket.
    (socket as { readableFlowing: boolean | null }).readableFlowing = null;
    socket.unshift(head);
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
    this.h2.emit("connection", socket);
    return true;
  }

  /** Ends the HTTP/2 connections of the plain port. */
  close(): void {
    for (const s of this.sockets) s.destroy();
  }
}
