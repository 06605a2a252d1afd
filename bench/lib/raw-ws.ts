/**
 * A bare WebSocket client on a TCP socket, for benchmarks that must measure the server rather
 * than a client library: the upgrade handshake, masked binary frames out, and unfragmented
 * frames in, parsed in place. It plays the part the raw-socket readers play for SSE: a receiver
 * that costs next to nothing per frame, so many of them in one process do not set the pace.
 * Not a general client: no fragmentation, no extensions, no close handshake.
 */
import { randomBytes } from "node:crypto";
import net from "node:net";

const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

export interface RawWs {
  /** Sends `payload` as one masked binary frame. */
  send(payload: Buffer): void;
  /** Sends each payload as a masked binary frame, all in one socket write; false when the socket's buffer is full. */
  sendAll(payloads: readonly Buffer[]): boolean;
  /** The TCP socket, for its `drain` event. */
  readonly socket: net.Socket;
  close(): void;
}

/** One masked client frame (the mask is zero: the server unmasks it all the same). */
function frame(opcode: number, payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const out = Buffer.allocUnsafe(head + 4 + n);
  out[0] = 0x80 | opcode;
  if (n < 126) out[1] = 0x80 | n;
  else if (n < 65536) {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(n, 2);
  } else {
    out[1] = 0x80 | 127;
    out.writeBigUInt64BE(BigInt(n), 2);
  }
  out.writeUInt32BE(0, head);
  payload.copy(out, head + 4);
  return out;
}

/** Most bytes of an upgrade answer, and of one frame, this client holds. */
const MAX_HEAD = 64 * 1024;
const MAX_FRAME = 16 * 1024 * 1024;

/**
 * Opens `url` (`ws://host:port/path`); `onFrame` gets each binary frame's payload (a view of the
 * received bytes, valid during the call) with the time its bytes arrived.
 */
export function connectRawWs(url: string, onFrame: (payload: Buffer, now: number) => void): Promise<RawWs> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port) });
    socket.setNoDelay(true);
    let upgraded = false;
    let pending: Buffer | null = null;
    const ws: RawWs = {
      send: (payload) => socket.write(frame(OP_BINARY, payload)),
      sendAll: (payloads) => socket.write(Buffer.concat(payloads.map((p) => frame(OP_BINARY, p)))),
      socket,
      close: () => socket.destroy(),
    };
    socket.once("connect", () => {
      socket.write(
        `GET ${u.pathname || "/"} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    socket.on("error", reject);
    // A peer that misbehaves ends the connection rather than growing `pending` without end.
    const fail = (why: string): void => {
      pending = null;
      socket.destroy(new Error(why));
    };
    socket.on("data", (chunk: Buffer) => {
      const now = performance.now();
      let buf = pending === null ? chunk : Buffer.concat([pending, chunk]);
      pending = null;
      if (!upgraded) {
        const end = buf.indexOf("\r\n\r\n");
        if (end === -1) {
          if (buf.length > MAX_HEAD) fail(`the upgrade answer of ${url} has no end within ${MAX_HEAD} bytes`);
          else pending = buf;
          return;
        }
        const status = buf.toString("latin1", 0, buf.indexOf("\r\n"));
        if (!status.includes(" 101 ")) {
          reject(new Error(`WebSocket upgrade of ${url} refused: ${status}`));
          socket.destroy();
          return;
        }
        upgraded = true;
        resolve(ws);
        buf = buf.subarray(end + 4);
      }
      let at = 0;
      while (buf.length - at >= 2) {
        const op = buf[at]! & 0x0f;
        let len = buf[at + 1]! & 0x7f;
        let head = 2;
        if (len === 126) {
          if (buf.length - at < 4) break;
          len = buf.readUInt16BE(at + 2);
          head = 4;
        } else if (len === 127) {
          if (buf.length - at < 10) break;
          len = Number(buf.readBigUInt64BE(at + 2));
          head = 10;
        }
        if (len > MAX_FRAME) {
          fail(`a frame of ${len} bytes from ${url} is over the ${MAX_FRAME}-byte limit`);
          return;
        }
        if (buf.length - at < head + len) break;
        const payload = buf.subarray(at + head, at + head + len);
        at += head + len;
        if (op === OP_BINARY) onFrame(payload, now);
        else if (op === OP_PING) socket.write(frame(OP_PONG, payload));
        else if (op === OP_CLOSE) socket.destroy();
      }
      if (at < buf.length) pending = Buffer.from(buf.subarray(at));
    });
  });
}
