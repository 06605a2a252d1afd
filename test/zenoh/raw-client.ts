/**
 * A lean zenoh client over raw TCP, TLS or UDP for the door's tests (and the session-count
 * benchmark): it does the INIT/OPEN handshake with the codec of src/zenoh/codec/, sends network
 * messages in FRAMEs (or anything else as raw batches), and collects what the router sends,
 * batch by batch.
 */
import { Buffer } from "node:buffer";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { connect, type Socket } from "node:net";
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";
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
import type { Timestamp } from "../../src/core/timestamp.js";

/** How the raw client opens its session. */
/** A key expression on the wire, not declared (scope 0). */
export function wireKey(suffix: string): { scope: number; suffix: string; senderMapping: boolean } {
  return { scope: 0, suffix, senderMapping: false };
}

/** A PUT body carrying `payload`, with `encoding` when given, and `timestamp` when given. */
export function wirePut(payload: string | Buffer, encoding?: string, timestamp?: Timestamp) {
  return {
    kind: "put" as const,
    encoding: encoding ?? "",
    hasEncoding: encoding !== undefined,
    payload: Buffer.isBuffer(payload) ? payload : Buffer.from(payload),
    ...(timestamp ? { timestamp } : {}),
  };
}

export interface HandshakeOptions {
  zid?: string;
  whatami?: "client" | "peer";
  leaseMs?: number;
  /** zenoh user/password credentials, sent as zenoh-rust's client sends them. */
  credentials?: { user: string; password: string };
  /** Asks for priority lanes. */
  qos?: boolean;
  /** A sequence-number resolution (0: 8 bits … 2: 32). */
  snRes?: number;
  /** Fragment markers (1 unless given). */
  patch?: number;
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
  private readonly waiters = new Set<() => void>();

  /** The UDP socket, for a client over UDP (then `socket` is not used). */
  private udp: UdpSocket | undefined;
  /** The next SN of each reliable lane (priority 0 to 7; lane 5 without QoS). */
  readonly snOut = [0, 0, 0, 0, 0, 0, 0, 0];

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

  /** Connects over TLS (`options`: the CA to trust, a client certificate...). */
  static async connectTls(port: number, options: ConnectionOptions = {}): Promise<RawClient> {
    const socket = tlsConnect({ port, host: "127.0.0.1", servername: "localhost", ...options });
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", resolve);
      socket.once("error", reject);
      socket.once("close", () => reject(new Error("the TLS connection closed before its handshake ended")));
    });
    return new RawClient(socket);
  }

  /** A client over UDP: each batch is one datagram, without the length prefix. */
  static async connectUdp(port: number, host = "127.0.0.1"): Promise<RawClient> {
    const udp = createSocket("udp4");
    await new Promise<void>((resolve) => udp.connect(port, host, resolve));
    // An unused stream stands in for `socket`, so the TCP paths stay as they are.
    const c = new RawClient(new (await import("node:net")).Socket());
    c.udp = udp;
    udp.on("message", (d: Buffer) => c.onBatch(d));
    udp.on("error", () => {});
    return c;
  }

  /** Connects and opens a session (client by default). */
  static async open(port: number, opts: HandshakeOptions = {}): Promise<RawClient> {
    const c = await RawClient.connect(port);
    await c.handshake(opts);
    return c;
  }

  /**
   * The INIT/OPEN handshake (the client's SNs start at 0); rejects when the router answers with
   * CLOSE (or nothing) instead of an ack.
   */
  async handshake(opts: HandshakeOptions = {}): Promise<void> {
    const creds = opts.credentials;
    this.sendBatch((w) =>
      encodeInitSyn(w, {
        whatami: opts.whatami ?? "client",
        zid: opts.zid ?? "C0FFEE",
        patch: opts.patch ?? 1,
        auth: creds ? usrPwdClient.initSyn() : undefined,
        ...(opts.qos ? { qos: true } : {}),
        ...(opts.snRes !== undefined ? { snRes: opts.snRes } : {}),
      }),
    );
    const ack = await this.waitTransport((t) => t.kind === "init" || t.kind === "close");
    if (ack.kind !== "init" || !ack.msg.cookie) throw new Error("no INIT ack");
    const auth = creds ? usrPwdClient.openSyn(ack.msg.auth, creds.user, creds.password) : undefined;
    this.sendBatch((w) =>
      encodeOpen(w, {
        ack: false,
        leaseMs: opts.leaseMs ?? 10_000,
        initialSn: 0,
        cookie: ack.msg.cookie,
        auth,
        ...(opts.qos ? { qos: true } : {}),
      }),
    );
    const open = await this.waitTransport((t) => t.kind === "open" || t.kind === "close");
    if (open.kind !== "open") throw new Error("the router closed the session instead of an OPEN ack");
  }

  /** Sends one batch whose content `write` encodes (the length prefix is added here on TCP and TLS). */
  sendBatch(write: (w: BinaryWriter) => void): void {
    const w = new BinaryWriter(256);
    w.u16(0);
    write(w);
    w.patchU16(0, w.length - 2);
    const framed = w.finish();
    if (this.udp) this.udp.send(framed.subarray(2));
    else this.socket.write(framed);
  }

  /** Sends network messages in one reliable FRAME, with the next SN of its lane. */
  sendFrame(...writes: Array<(w: BinaryWriter) => void>): void {
    this.sendFrameOn({ priority: 5 }, ...writes);
  }

  /**
   * Sends network messages in one FRAME: reliable unless said, on lane `priority` (its QoS
   * extension when `qos`), with SN `sn` or the lane's next one.
   */
  sendFrameOn(
    opts: { priority?: number; reliable?: boolean; qos?: boolean; sn?: number },
    ...writes: Array<(w: BinaryWriter) => void>
  ): void {
    const p = opts.priority ?? 5;
    const sn = opts.sn ?? this.snOut[p]!++;
    this.sendBatch((w) => {
      encodeFrameHeader(w, sn, opts.reliable ?? true, p, opts.qos ?? false);
      for (const write of writes) write(w);
    });
  }

  /** Sends raw bytes (for malformed input): a datagram on UDP, else bytes on the stream. */
  sendRaw(bytes: Uint8Array): void {
    if (this.udp) this.udp.send(bytes);
    else this.socket.write(bytes);
  }

  private onData(d: Buffer): void {
    this.pending = Buffer.concat([this.pending, d]);
    while (this.pending.length >= 2) {
      const len = this.pending.readUInt16LE(0);
      if (this.pending.length < 2 + len) break;
      const batch = this.pending.subarray(2, 2 + len);
      this.pending = this.pending.subarray(2 + len);
      this.onBatch(batch);
    }
  }

  private onBatch(batch: Buffer): void {
    this.batches.push(Buffer.from(batch));
    const r = new BinaryReader(batch);
    while (!r.done) {
      const t = decodeTransport(r);
      this.transport.push(t);
      // A CLOSE ends a UDP "connection": there is no socket close to see.
      if (t.kind === "close" && this.udp) this.closed = true;
      if (t.kind === "frame") while (!r.done && isNetworkHeader(r.peekU8())) this.network.push(decodeNetwork(r));
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

  /** The reason of the CLOSE the router sent, if it sent one. */
  get closeReason(): number | undefined {
    const t = this.transport.find((m) => m.kind === "close");
    return t?.kind === "close" ? t.reason : undefined;
  }

  waitClosed(timeoutMs = 5000): Promise<true> {
    return this.until(() => this.closed || undefined, timeoutMs, "the connection to close");
  }

  close(): void {
    this.socket.destroy();
    if (this.udp) {
      const u = this.udp;
      this.udp = undefined;
      u.close();
    }
  }
}
