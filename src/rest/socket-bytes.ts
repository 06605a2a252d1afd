/**
 * Bytes a server wrote to its clients' sockets, counted per connection rather than per request:
 * reading `socket.bytesWritten` walks the socket's write buffer, and twice per request it cost
 * about a twentieth of a PUT. Read on scrape: the connections closed, plus those still open.
 */
import type { Server } from "node:http";
import type { Socket } from "node:net";

export class SocketBytes {
  readonly #live = new Set<Socket>();
  #closed = 0;

  /** Counts the sockets of `server` (`secure`: its TLS sockets, the ones requests see). */
  attach(server: Server, secure: boolean): void {
    server.on(secure ? "secureConnection" : "connection", (socket: Socket) => {
      this.#live.add(socket);
      socket.once("close", () => {
        this.#live.delete(socket);
        this.#closed += socket.bytesWritten ?? 0;
      });
    });
  }

  /** Bytes written so far, headers and streams included. */
  total(): number {
    let n = this.#closed;
    for (const s of this.#live) n += s.bytesWritten ?? 0;
    return n;
  }
}
