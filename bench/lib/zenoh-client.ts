/**
 * A lean zenoh 1.x client for the benchmarks: one TCP transport, the INIT/OPEN handshake, and
 * PUSH puts in reliable FRAMEs, with zest's own wire codec (src/zenoh/codec). It holds no
 * declarations, tables or timers, so 1,000 of them in one process cost little beside what the
 * router spends on each; and it puts at a paced rate with a send time in each payload, which
 * no pico example can.
 */
import { Buffer } from "node:buffer";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { BinaryReader, BinaryWriter } from "../../src/core/binary.js";
import { DEFAULT_QOS_BYTE, type WireExpr } from "../../src/zenoh/codec/core.js";
import type { Declaration } from "../../src/zenoh/codec/declarations.js";
import { decodeNetwork, encodeDeclare, encodePush, type PushMsg } from "../../src/zenoh/codec/network.js";
import {
  decodeTransport,
  encodeFrameHeader,
  isNetworkHeader,
  encodeInitSyn,
  encodeKeepAlive,
  encodeOpen,
} from "../../src/zenoh/codec/transport.js";

const LEASE_MS = 10_000;

/** An open zenoh session over one TCP connection. */
export class LeanZenohClient {
  private sn = 0;
  private readonly w = new BinaryWriter(512);
  private keepAlive: NodeJS.Timeout | undefined;

  private constructor(
    readonly socket: Socket,
    /** The router's zid, from its INIT ack. */
    readonly routerZid: string,
  ) {
    socket.on("error", () => {}); // a closed router ends the benchmark, not this process
    // Keep the session past its lease when idle (zenoh sends KEEP_ALIVE at a quarter of it).
    this.keepAlive = setInterval(() => this.send((w) => encodeKeepAlive(w)), LEASE_MS / 4);
    this.keepAlive.unref();
  }

  /** Connects to `host:port` and opens a session as a client (random zid). */
  static async connect(host: string, port: number): Promise<LeanZenohClient> {
    const socket = connect({ host, port });
    socket.setNoDelay(true);
    await once(socket, "connect");
    const reader = batchReader(socket);
    const zid = randomBytes(8).toString("hex");
    const w = new BinaryWriter(64);
    w.u16(0);
    encodeInitSyn(w, { whatami: "client", zid });
    w.patchU16(0, w.length - 2);
    socket.write(Buffer.from(w.view()));
    const ack = decodeTransport(new BinaryReader(await reader.next()));
    if (ack.kind !== "init" || !ack.msg.ack) throw new Error(`expected an INIT ack, got ${ack.kind}`);
    w.reset();
    w.u16(0);
    encodeOpen(w, { ack: false, leaseMs: LEASE_MS, initialSn: 0, cookie: ack.msg.cookie! });
    w.patchU16(0, w.length - 2);
    socket.write(Buffer.from(w.view()));
    const open = decodeTransport(new BinaryReader(await reader.next()));
    if (open.kind !== "open" || !open.msg.ack) throw new Error(`expected an OPEN ack, got ${open.kind}`);
    reader.stop();
    socket.on("data", () => {}); // whatever the router sends later (keep-alives) is read and dropped
    return new LeanZenohClient(socket, ack.msg.zid);
  }

  /** Puts `payload` on `key` (a reliable FRAME with one PUSH, text/plain), written at once. */
  put(key: string, payload: Buffer): void {
    this.send((w) => {
      encodeFrameHeader(w, this.sn++ & 0x0fff_ffff, true);
      encodePush(
        w,
        { scope: 0, suffix: key, senderMapping: false },
        { kind: "put", encoding: "text/plain", hasEncoding: true, payload },
      );
    });
  }

  /** Sends one declaration (a reliable FRAME with one DECLARE). */
  declare(decl: Declaration): void {
    this.send((w) => {
      encodeFrameHeader(w, this.sn++ & 0x0fff_ffff, true);
      encodeDeclare(w, decl);
    });
  }

  /**
   * Puts `payload` on `key` `n` times in one batch (a reliable FRAME of `n` PUSHes without
   * encoding, as `z_pub_thr` sends them, each with the QoS byte `qos`: a publisher with
   * congestion control BLOCK, as zenoh-python's in bench/workers, sends 0x0d); returns false when
   * the socket asks to wait for drain.
   */
  putBatch(key: WireExpr, payload: Buffer, n: number, qos = DEFAULT_QOS_BYTE): boolean {
    const w = this.w;
    w.reset();
    w.u16(0);
    encodeFrameHeader(w, this.sn++ & 0x0fff_ffff, true);
    const body = { kind: "put" as const, encoding: "", hasEncoding: false, payload };
    for (let i = 0; i < n; i++) encodePush(w, key, body, qos);
    w.patchU16(0, w.length - 2);
    return this.socket.write(Buffer.from(w.view()));
  }

  /** Calls `onPushes(n)` with the number of PUSHes in each batch the router sends from now on. */
  countPushes(onPushes: (n: number) => void): void {
    this.readPushes((pushes) => {
      if (pushes.length > 0) onPushes(pushes.length);
    });
  }

  /**
   * Calls `onPayload` with each PUSH put's payload the router sends from now on, with the time
   * its bytes were read (`performance.now()`): a subscriber's side of a latency measurement.
   */
  onPayloads(onPayload: (payload: Buffer, at: number) => void): void {
    this.readPushes((pushes, at) => {
      for (const p of pushes) if (p.body.kind === "put") onPayload(p.body.payload, at);
    });
  }

  /** Hands `onBatch` the PUSHes of each batch the router sends from now on. */
  private readPushes(onBatch: (pushes: PushMsg[], at: number) => void): void {
    let pending = Buffer.alloc(0);
    this.socket.removeAllListeners("data");
    this.socket.on("data", (chunk: Buffer) => {
      const at = performance.now();
      let buf = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
      let off = 0;
      while (buf.length - off >= 2 && buf.length - off - 2 >= buf.readUInt16LE(off)) {
        const len = buf.readUInt16LE(off);
        const r = new BinaryReader(buf, off + 2, off + 2 + len);
        off += 2 + len;
        const pushes: PushMsg[] = [];
        while (!r.done) {
          const t = decodeTransport(r);
          if (t.kind !== "frame") continue;
          while (!r.done && isNetworkHeader(r.peekU8())) {
            const m = decodeNetwork(r);
            if (m.kind === "push") pushes.push(m);
          }
        }
        onBatch(pushes, at);
      }
      buf = buf.subarray(off);
      pending = Buffer.from(buf);
    });
  }

  private send(write: (w: BinaryWriter) => void): void {
    const w = this.w;
    w.reset();
    w.u16(0);
    write(w);
    w.patchU16(0, w.length - 2);
    this.socket.write(Buffer.from(w.view()));
  }

  /** Ends the connection. */
  close(): void {
    clearInterval(this.keepAlive);
    this.socket.destroy();
  }
}

/** Reads length-prefixed batches off `socket` during the handshake. */
function batchReader(socket: Socket): { next(): Promise<Buffer>; stop(): void } {
  let buf = Buffer.alloc(0);
  const waiting: Array<(b: Buffer) => void> = [];
  const ready: Buffer[] = [];
  const onData = (chunk: Buffer): void => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16LE(0)) {
      const n = buf.readUInt16LE(0);
      const batch = buf.subarray(2, 2 + n);
      buf = buf.subarray(2 + n);
      const w = waiting.shift();
      if (w) w(batch);
      else ready.push(batch);
    }
  };
  socket.on("data", onData);
  return {
    next: () => {
      const b = ready.shift();
      if (b) return Promise.resolve(b);
      return new Promise<Buffer>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error("no answer to the handshake within 10 s")), 10_000);
        waiting.push((x) => {
          clearTimeout(t);
          resolve(x);
        });
      });
    },
    stop: () => socket.off("data", onData),
  };
}
