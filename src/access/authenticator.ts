/**
 * Credentials to a user name: HTTP Basic (`user:password`) and Bearer tokens (`<id>.<secret>`),
 * checked against salted scrypt hashes (docs/security.md). An scrypt check costs tens of
 * milliseconds, so:
 * - a credential string verified recently is remembered (bounded LRU): a client sending the
 *   same `Authorization` header on every request pays one scrypt, then a Map lookup;
 * - a credential string that failed recently fails at once, without scrypt;
 * - each client address has a budget of failed checks per minute;
 * - at most `CONCURRENT` checks run at once and at most `QUEUED` wait, so a flood of wrong
 *   passwords cannot take the thread pool (file I/O shares it) or memory.
 */
import { Buffer } from "node:buffer";
import { ZestError } from "../core/errors.js";
import { parseHash, type ScryptHash, verifySecret } from "./hash.js";
import { BoundedCache } from "./bounded-cache.js";
import type { AccessControlConfig } from "./schema.js";

const CACHE_ENTRIES = 4096;
const CONCURRENT = 2;
const QUEUED = 256;
const FAILURES_PER_WINDOW = 20;
const FAILURE_WINDOW_MS = 60_000;
const ADDRESSES_TRACKED = 10_000;
/** Longest `Authorization` value considered (longer ones are refused unread). */
const MAX_CREDENTIAL_LENGTH = 4096;

/**
 * Checked for an unknown user or token id, so a miss costs as much as a wrong password. Its
 * value matches no secret in practice, and no verdict ever comes from it.
 */
const DUMMY: ScryptHash = parseHash(
  `$scrypt$ln=14,r=8,p=1$${Buffer.alloc(16, 7).toString("base64")}$${Buffer.alloc(32, 7).toString("base64")}`,
);

type Outcome = string | ZestError;

export class Authenticator {
  readonly #users = new Map<string, ScryptHash>();
  readonly #tokens = new Map<string, { user: string; hash: ScryptHash }>();
  /** Credential string → user, or the error it failed with. */
  readonly #verified = new BoundedCache<string, Outcome>(CACHE_ENTRIES);
  readonly #pending = new Map<string, Promise<Outcome>>();
  readonly #failures = new BoundedCache<string, { count: number; since: number }>(ADDRESSES_TRACKED);
  #running = 0;
  readonly #queue: Array<() => void> = [];

  /** Throws an Error naming the bad entry when a hash does not parse. */
  constructor(config: Pick<AccessControlConfig, "users" | "tokens">) {
    for (const u of config.users) {
      if (this.#users.has(u.name)) throw new Error(`access_control.users: user "${u.name}" is listed twice`);
      this.#users.set(u.name, parseOr(`access_control.users "${u.name}"`, u.password_hash));
    }
    for (const t of config.tokens) {
      if (this.#tokens.has(t.id)) throw new Error(`access_control.tokens: token id "${t.id}" is listed twice`);
      this.#tokens.set(t.id, { user: t.user, hash: parseOr(`access_control.tokens "${t.id}"`, t.token_hash) });
    }
  }

  /** True when any credential is configured (so a refused anonymous request asks for them: 401). */
  get hasCredentials(): boolean {
    return this.#users.size > 0 || this.#tokens.size > 0;
  }

  /** The user of an `Authorization` value verified recently, else undefined; never checks or counts. */
  known(authorization: string): string | undefined {
    const known = this.#verified.get(authorization);
    return typeof known === "string" ? known : undefined;
  }

  /**
   * The user an `Authorization` header names, synchronously when the header was checked
   * recently; throws or rejects with an `unauthenticated` ZestError otherwise.
   */
  verify(authorization: string, address: string): string | Promise<string> {
    const known = this.#verified.get(authorization);
    if (known !== undefined) {
      if (typeof known === "string") return known;
      this.#fail(address);
      throw known;
    }
    if (authorization.length > MAX_CREDENTIAL_LENGTH) throw unauthenticated("credentials too long");
    const f = this.#failures.get(address);
    if (f !== undefined && f.count >= FAILURES_PER_WINDOW && Date.now() - f.since < FAILURE_WINDOW_MS) {
      throw unauthenticated(`too many failed logins from ${address}: retry in a minute`);
    }
    let pending = this.#pending.get(authorization);
    if (pending === undefined) {
      pending = this.#check(authorization).then((outcome) => {
        this.#pending.delete(authorization);
        // A full queue is no verdict on the credential: only real answers are remembered.
        if (typeof outcome === "string" || outcome.kind === "unauthenticated")
          this.#verified.set(authorization, outcome);
        return outcome;
      });
      this.#pending.set(authorization, pending);
    }
    return pending.then((outcome) => {
      if (typeof outcome === "string") return outcome;
      if (outcome.kind === "unauthenticated") this.#fail(address);
      throw outcome;
    });
  }

  #fail(address: string): void {
    const now = Date.now();
    const f = this.#failures.get(address);
    if (f === undefined || now - f.since >= FAILURE_WINDOW_MS) this.#failures.set(address, { count: 1, since: now });
    else f.count++;
  }

  async #check(authorization: string): Promise<Outcome> {
    const space = authorization.indexOf(" ");
    const scheme = space === -1 ? authorization : authorization.slice(0, space);
    const value = space === -1 ? "" : authorization.slice(space + 1).trim();
    let user: string | undefined;
    let secret: string;
    let hash: ScryptHash | undefined;
    switch (scheme.toLowerCase()) {
      case "basic": {
        const decoded = Buffer.from(value, "base64").toString("utf8");
        const colon = decoded.indexOf(":");
        if (colon === -1) return unauthenticated("malformed Basic credentials (expected base64 of user:password)");
        user = decoded.slice(0, colon);
        secret = decoded.slice(colon + 1);
        hash = this.#users.get(user);
        break;
      }
      case "bearer": {
        const dot = value.indexOf(".");
        const token = dot === -1 ? undefined : this.#tokens.get(value.slice(0, dot));
        secret = value;
        user = token?.user;
        hash = token?.hash;
        break;
      }
      default:
        return unauthenticated(`unsupported authorization scheme "${scheme.slice(0, 32)}": use Basic or Bearer`);
    }
    const ok = await this.#limited(() => verifySecret(secret, hash ?? DUMMY));
    if (ok instanceof ZestError) return ok;
    return ok && hash !== undefined && user !== undefined ? user : unauthenticated("invalid credentials");
  }

  /** Runs an scrypt check within the concurrency bound; too many waiting is `unavailable`. */
  async #limited(check: () => Promise<boolean>): Promise<boolean | ZestError> {
    if (this.#running >= CONCURRENT) {
      if (this.#queue.length >= QUEUED)
        return new ZestError("unavailable", "too many credential checks in progress: retry shortly");
      await new Promise<void>((resolve) => this.#queue.push(resolve));
    }
    this.#running++;
    try {
      return await check();
    } finally {
      this.#running--;
      this.#queue.shift()?.();
    }
  }
}

function unauthenticated(reason: string): ZestError {
  return new ZestError("unauthenticated", reason);
}

function parseOr(where: string, hash: string): ScryptHash {
  try {
    return parseHash(hash);
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message}`);
  }
}
