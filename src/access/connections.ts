/**
 * Connection limits for a front door's server (docs/security.md): a cap per client address and
 * a total cap derived from the file-descriptor limit, so one client holding many half-sent
 * requests cannot take every descriptor and lock everyone else out.
 */
import { execFileSync } from "node:child_process";
import type { Server } from "node:net";
import type { Socket } from "node:net";
import { normalizeAddress } from "./access.js";

export interface ConnectionLimits {
  /** Open connections per client address. */
  readonly perAddress: number;
  /** Open connections in all. */
  readonly total: number;
}

/** Descriptors kept for files, storages and the fabric when sizing the total cap. */
const RESERVED_FDS = 128;
/** Open connections per client address when the config does not say (at most a quarter of the total). */
export const DEFAULT_PER_ADDRESS = 256;

let fdLimit: number | undefined;

/**
 * The soft file-descriptor limit (`ulimit -n`), read once from a child shell: Node 20 has no
 * `getrlimit`. `Infinity` when unlimited or unknown.
 */
export function fileDescriptorLimit(): number {
  if (fdLimit !== undefined) return fdLimit;
  try {
    const out = execFileSync("/bin/sh", ["-c", "ulimit -n"], {
      encoding: "utf8",
      timeout: 2000,
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    const n = Number(out);
    fdLimit = Number.isInteger(n) && n > 0 ? n : Infinity;
  } catch {
    fdLimit = Infinity;
  }
  return fdLimit;
}

/** The per-address cap when none is set: a quarter of `total`, at most `DEFAULT_PER_ADDRESS`, at least 1. */
export function perAddressCap(total: number): number {
  return Math.max(1, Math.min(DEFAULT_PER_ADDRESS, Math.floor(total / 4)));
}

/** The limits for the given options, defaults derived from the descriptor limit. */
export function connectionLimits(opts: {
  perAddress?: number | undefined;
  total?: number | undefined;
}): ConnectionLimits {
  const fds = fileDescriptorLimit();
  const derived = Number.isFinite(fds) ? Math.max(16, Math.floor(fds - Math.min(RESERVED_FDS, fds / 4))) : 100_000;
  const total = opts.total ?? derived;
  const perAddress = opts.perAddress ?? perAddressCap(total);
  return { perAddress, total };
}

/** Counts connections per address on a server and closes those over a cap at once. */
export class ConnectionGuard {
  readonly limits: ConnectionLimits;
  readonly #byAddress = new Map<string, number>();
  #total = 0;
  #refused = 0;

  constructor(limits: ConnectionLimits) {
    this.limits = limits;
  }

  /** Connections open now. */
  get open(): number {
    return this.#total;
  }

  /** Connections refused so far. */
  get refused(): number {
    return this.#refused;
  }

  /** Guards `server` (a `node:http` or `node:https` server, or any `net.Server`). */
  attach(server: Server): void {
    // `connection` fires for plain sockets; https servers emit it for the raw socket too,
    // before the TLS handshake, so a refused client never costs a handshake.
    server.on("connection", (socket: Socket) => {
      const release = this.admit(socket.remoteAddress ?? "");
      if (release === undefined) socket.destroy();
      else socket.once("close", release);
    });
  }

  /** True while a client at `address` would be admitted (nothing is taken or counted). */
  hasRoom(address: string): boolean {
    return (
      (this.#byAddress.get(normalizeAddress(address)) ?? 0) < this.limits.perAddress && this.#total < this.limits.total
    );
  }

  /**
   * Admits a connection from `address`, for a door whose clients are not sockets of a server it
   * attached (a UDP remote): the function that releases its place, or undefined (counted as
   * refused) when a cap is reached.
   */
  admit(address: string): (() => void) | undefined {
    const key = normalizeAddress(address);
    const n = this.#byAddress.get(key) ?? 0;
    if (n >= this.limits.perAddress || this.#total >= this.limits.total) {
      this.#refused++;
      return undefined;
    }
    this.#byAddress.set(key, n + 1);
    this.#total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#total--;
      const left = (this.#byAddress.get(key) ?? 1) - 1;
      if (left <= 0) this.#byAddress.delete(key);
      else this.#byAddress.set(key, left);
    };
  }
}
