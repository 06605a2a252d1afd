/**
 * The measuring loop of the per-message counters (bench/zenoh-instructions.ts,
 * bench/remote-instructions.ts): send batches while a window has room, count what the subscriber
 * receives, and count zest's instructions (callgrind) or read its CPU time over the last `count`.
 */
import type { Socket } from "node:net";
import { callgrindControl } from "./callgrind.js";
import type { MessageCountArgs } from "./message-count-args.js";
import { processCpuSeconds } from "./proc.js";

/** What one run measured: zest's CPU seconds and the wall time of the counted window. */
export interface MessageCountRun {
  cpu: number;
  wallMs: number;
}

/** How the loop reaches the publisher and the subscriber. */
export interface MessageCountIo {
  /** Sends `n` messages in one write; false when the socket's buffer is full (then `drain` is awaited). */
  send(n: number): boolean;
  /** The publisher's socket, for its `drain`. */
  readonly socket: Socket;
  /** Calls `received(n)` whenever the subscriber got `n` more messages. */
  onReceived(received: (n: number) => void): void;
  /** At most this many sent and not yet received. */
  readonly window: number;
  /** What a message is called in the stall error. */
  readonly what: string;
}

/**
 * Publishes batches of `args.perBatch` (a batch goes once the window has room for all of it) until
 * the subscriber has received `warm + count`, counting over the last `count`. Rejects if nothing
 * arrives for two minutes.
 */
export function measureMessages(zestPid: number, args: MessageCountArgs, io: MessageCountIo): Promise<MessageCountRun> {
  const { mode, warm, count, perBatch } = args;
  const total = warm + count;
  let sent = 0;
  let received = 0;
  let cpu0 = 0;
  let t0 = 0;
  return new Promise((resolve, reject) => {
    let waitingDrain = false;
    const pump = (): void => {
      for (;;) {
        const n = Math.min(perBatch, total - sent);
        if (waitingDrain || n === 0 || sent - received + n > io.window) return;
        sent += n;
        if (!io.send(n)) {
          waitingDrain = true;
          io.socket.once("drain", () => {
            waitingDrain = false;
            pump();
          });
        }
      }
    };
    let lastSeen = -1;
    const stall = setInterval(() => {
      if (received === lastSeen) reject(new Error(`stalled at ${received} of ${total} ${io.what} received`));
      lastSeen = received;
    }, 120_000);
    io.onReceived((n) => {
      const before = received;
      received += n;
      if (before < warm && received >= warm) {
        if (mode === "instructions") callgrindControl(zestPid, "-i", "on");
        cpu0 = processCpuSeconds(zestPid);
        t0 = performance.now();
      }
      if (received >= total) {
        clearInterval(stall);
        const wallMs = performance.now() - t0;
        const cpu = processCpuSeconds(zestPid) - cpu0;
        if (mode === "instructions") callgrindControl(zestPid, "-i", "off");
        resolve({ cpu, wallMs });
        return;
      }
      pump();
    });
    pump();
  });
}
