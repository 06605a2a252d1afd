/**
 * A lean zenoh client over raw TCP for the door's tests (and the session-count benchmark): it
 * does the INIT/OPEN handshake with the codec of src/zenoh/codec/, sends network messages in
 * FRAMEs (or anything else as raw batches), and collects what the router sends, batch by batch.
 */
import { Buffer } from "node:buffer";
import { connect, type Socket } from "node:net";
import { BinaryReader, BinaryWriter } from "../../src/core/binary.js";
import { decodeNetwork, type NetworkMsg } from "../../src/zenoh/codec/network.js";
import {
  decodeTransport,
  encodeFrameHeader,
  encodeInitSyn,
  encodeOpen,
  isNetworkHeader,
  type TransportMsg,
} from "../../src/zenoh/codec/transport.js";
import { usrPwdClient } from "../../src/zenoh/auth-usrpwd.js";

/** How the raw client opens its session. */
export interface HandshakeOptions {
  zid?: string;
  whatami?: "client" | "peer";
  leaseMs?: number;
  /** zenoh user/password credentials, sent as zenoh-rust's client sends them. */
  credentials?: { user: string; password: string };
}

export class RawClient {
  /** Every batch received, raw. */
  readonly batches: Buffer[] = [];
  /** Every transport message received (FRAMEs without their content). */
  readonly transport: TransportMsg[] = [];
  /** Every network message received. */
  readonly network: NetworkMsg[] = [];
  closed = false;
  private pending = Buffer.alloc(0);
  private sn = 0;
  private readonly waiters = new Set<() => void>();

  private constructor(readonly socket: Socket) {
    socket.on("data", (d: Buffer) => this.onData(d));
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
    socket.on("error", () => {});
  }

  static async connect(port: number, host = "127.0.0.1"): Promise<RawClient> {
    const socket = connect(port, host);
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    return new RawClient(socket);
  }

  /** Connects and opens a session (client by default). */
  static async open(port: number, opts: HandshakeOptions = {}): Promise<RawClient> {
    const c = await RawClient.connect(port);
    await c.handshake(opts);
    return c;
  }

  /** Opens the session; rejects when the router answers with CLOSE (or nothing) instead of an ack. */
  async handshake(opts: HandshakeOptions = {}): Promise<void> {
    const creds = opts.credentials;
    this.sendBatch((w) =>
      encodeInitSyn(w, {
        whatami: opts.whatami ?? "client",
        zid: opts.zid ?? "C0FFEE",
        patch: 1,
        auth: creds ? usrPwdClient.initSyn() : undefined,
      }),
    );
    const ack = await this.waitTransport((t) => t.kind === "init" || t.kind === "close");
    if (ack.kind !== "init" || !ack.msg.cookie) throw new Error("no INIT ack");
    const auth = creds ? usrPwdClient.openSyn(ack.msg.auth, creds.user, creds.password) : undefined;
    this.sendBatch((w) =>
      encodeOpen(w, { ack: false, leaseMs: opts.leaseMs ?? 10_000, initialSn: 0, cookie: ack.msg.cookie, auth }),
    );
    const open = await this.waitTransport((t) => t.kind === "open" || t.kind === "close");
    if (open.kind !== "open") throw new Error("the router closed the session instead of an OPEN ack");
  }

  /** Sends one batch whose content `write` encodes (the length prefix is added here). */
  sendBatch(write: (w: BinaryWriter) => void): void {
    const w = new BinaryWriter(256);
    w.u16(0);
    write(w);
    w.patchU16(0, w.length - 2);
    this.socket.write(w.finish());
  }

  /** Sends network messages in one reliable FRAME. */
  sendFrame(...writes: Array<(w: BinaryWriter) => void>): void {
    this.sendBatch((w) => {
      encodeFrameHeader(w, this.sn++, true);
      for (const write of writes) write(w);
    });
  }

  /** Sends raw bytes (for malformed input). */
  sendRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  private onData(d: Buffer): void {
    this.pending = Buffer.concat([this.pending, d]);
    while (this.pending.length >= 2) {
      const len = this.pending.readUInt16LE(0);
      if (this.pending.length < 2 + len) break;
      const batch = this.pending.subarray(2, 2 + len);
      this.pending = this.pending.subarray(2 + len);
      this.batches.push(Buffer.from(batch));
      const r = new BinaryReader(batch);
      while (!r.done) {
        const t = decodeTransport(r);
        this.transport.push(t);
        if (t.kind === "frame") while (!r.done && isNetworkHeader(r.peekU8())) this.network.push(decodeNetwork(r));
      }
    }
    this.wake();
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves once `check` holds (re-checked on each arrival, and every 20 ms); rejects after `timeoutMs`. */
  until<T>(check: () => T | undefined | false, timeoutMs = 5000, what = "condition"): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const tryIt = (): boolean => {
        const v = check();
        if (v !== undefined && v !== false) {
          this.waiters.delete(tryIt as () => void);
          clearTimeout(timer);
          clearInterval(poll);
          resolve(v);
          return true;
        }
        return false;
      };
      const poll = setInterval(tryIt, 20);
      const timer = setTimeout(() => {
        this.waiters.delete(tryIt as () => void);
        clearInterval(poll);
        reject(new Error(`timed out waiting for ${what}`));
      }, timeoutMs);
      if (!tryIt()) this.waiters.add(tryIt as () => void);
    });
  }

  waitTransport(pred: (t: TransportMsg) => boolean, timeoutMs = 5000): Promise<TransportMsg> {
    return this.until(() => this.transport.find(pred), timeoutMs, "a transport message");
  }

  waitNetwork(pred: (m: NetworkMsg) => boolean, timeoutMs = 5000): Promise<NetworkMsg> {
    return this.until(() => this.network.find(pred), timeoutMs, "a network message");
  }

  waitClosed(timeoutMs = 5000): Promise<true> {
    return this.until(() => this.closed || undefined, timeoutMs, "the connection to close");
  }

  close(): void {
    this.socket.destroy();
  }
}
