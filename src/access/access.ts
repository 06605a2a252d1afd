/**
 * Authentication and access-control decisions, shared by every front door (REST, SSE, the
 * admin space, the remote API): docs/security.md. Nothing here knows about HTTP; a front door
 * hands over the `Authorization` value it received and the client's address, gets a
 * `Principal`, then asks `decide` for each operation and `mayRead` for each key it would send.
 *
 * ```ts
 * const access = AccessControl.fromConfig(config.access_control);
 * const principal = await access.authenticate({ authorization, address }); // throws unauthenticated
 * switch (access.decide(principal, "put", key)) { ... }                  // allow | deny | partial
 * replies.filter((r) => access.mayRead(principal, "query", r.sample.key));
 * ```
 */
import { ZestError } from "../core/errors.js";
import { Authenticator } from "./authenticator.js";
import { BoundedCache } from "./bounded-cache.js";
import { type Decision, type Identity, Policy } from "./policy.js";
import { problems } from "../config/schema.js";
import { type AccessControlConfig, accessControlSchema, MESSAGES, type Message } from "./schema.js";

export type { Decision, Identity } from "./policy.js";
export type { Message } from "./schema.js";

/** Who sent a request: a user (when credentials were given) and a client address. */
export interface Principal {
  /** The authenticated user, or undefined for a client that sent no credentials. */
  readonly user: string | undefined;
  /** The client's address (IPv4-mapped IPv6 addresses are given as IPv4). */
  readonly address: string;
  /** @internal Which subjects of the policy the client matches. */
  readonly subjects: Uint8Array;
  /** @internal Recent decisions on plain keys, by message: hot keys cost one Map lookup. */
  readonly decisions: Map<string, Decision>[];
}

/** What a front door knows about a client. */
export interface Credentials {
  /** The `Authorization` value (`Basic …` or `Bearer …`), if any. */
  readonly authorization?: string | undefined;
  /** The client's address as the socket reports it. */
  readonly address: string;
  /** The local address the connection arrived on (for `interfaces` subjects). */
  readonly localAddress?: string | undefined;
  /** The link it came over (for `link_protocols` subjects): `ws` for the remote API; none for REST. */
  readonly protocol?: Identity["protocol"];
}

const PRINCIPALS = 4096;
/** Decisions remembered per principal and message (the map is emptied when full). */
const DECISIONS = 1024;
const MESSAGE_INDEX: ReadonlyMap<Message, number> = new Map(MESSAGES.map((m, i) => [m, i]));

/** The access control of one router. `AccessControl.OPEN` allows everything. */
export class AccessControl {
  /** No access control: everyone may do everything (the default when none is configured). */
  static readonly OPEN = new AccessControl(undefined, undefined);

  readonly #policy: Policy | undefined;
  readonly #auth: Authenticator | undefined;
  /**
   * Principals by user ("" for anonymous clients), then by address (subjects depend on both).
   * Two lookups on strings the caller already holds: a concatenated key would be hashed anew
   * on every request.
   */
  readonly #principals = new BoundedCache<string, Map<string, Principal>>(PRINCIPALS);

  private constructor(policy: Policy | undefined, auth: Authenticator | undefined) {
    this.#policy = policy;
    this.#auth = auth;
  }

  /**
   * Compiles the `access_control` section (zenoh 1.x's shape plus users and tokens). Absent or
   * `enabled: false` gives `OPEN`. Throws an Error with a one-line reason for a bad section.
   */
  static fromConfig(section: unknown): AccessControl {
    if (section === undefined) return AccessControl.OPEN;
    const found = problems(accessControlSchema, section, ["access_control"]);
    if (found.length > 0) throw new Error(found.slice(0, 3).join("; "));
    return AccessControl.fromParsed(accessControlSchema.parse(section));
  }

  /** Compiles an `access_control` section already parsed with `accessControlSchema` (by `startZest`). */
  static fromParsed(section: AccessControlConfig | undefined): AccessControl {
    if (section === undefined || !section.enabled) return AccessControl.OPEN;
    return new AccessControl(new Policy(section), new Authenticator(section));
  }

  /** True when access control is on: requests are authenticated and decided. */
  get enabled(): boolean {
    return this.#policy !== undefined;
  }

  /** True when some subject names a link property (zids, link protocols, interfaces). */
  get usesLinks(): boolean {
    return this.#policy?.usesLinks ?? false;
  }

  /** True when a refused anonymous client should be asked for credentials (401, not 403). */
  get wantsCredentials(): boolean {
    return this.#auth?.hasCredentials ?? false;
  }

  /**
   * The principal behind a request: anonymous without credentials, a user with valid ones.
   * Synchronous for anonymous clients and for credentials checked recently (the common case);
   * otherwise a promise. Bad credentials throw (or reject with) an `unauthenticated` ZestError;
   * too many checks at once, an `unavailable` one.
   */
  authenticate(credentials: Credentials): Principal | Promise<Principal> {
    const address = normalizeAddress(credentials.address);
    const authorization = credentials.authorization;
    if (this.#auth === undefined || authorization === undefined || authorization === "")
      return this.#principal(undefined, address, credentials);
    const user = this.#auth.verify(authorization, address);
    return typeof user === "string"
      ? this.#principal(user, address, credentials)
      : user.then((u) => this.#principal(u, address, credentials));
  }

  /**
   * The principal of a client a door identified itself: the zenoh door's handshake checks
   * user/password credentials of its own (docs/zenoh-protocol.md), and knows the session's zid.
   */
  principalOf(who: Identity): Principal {
    return this.#principal(who.user, normalizeAddress(who.address), who);
  }

  /**
   * The principal when it is known without a check: an anonymous client, or credentials verified
   * recently. Undefined otherwise (call `authenticate`). Never throws, never counts a failure:
   * for fast paths that fall back to the full pipeline.
   */
  knownPrincipal(credentials: Credentials): Principal | undefined {
    const address = normalizeAddress(credentials.address);
    const authorization = credentials.authorization;
    if (this.#auth === undefined || authorization === undefined || authorization === "")
      return this.#principal(undefined, address, credentials);
    const user = this.#auth.known(authorization);
    return user === undefined ? undefined : this.#principal(user, address, credentials);
  }

  /** May `principal` send `message` on the key expression `ke` (canonical)? */
  decide(principal: Principal, message: Message, ke: string): Decision {
    if (this.#policy === undefined) return "allow";
    const cache = principal.decisions[MESSAGE_INDEX.get(message)!]!;
    let d = cache.get(ke);
    if (d === undefined) {
      d = this.#policy.decide(principal.subjects, message, ke);
      if (cache.size >= DECISIONS) cache.clear();
      cache.set(ke, d);
    }
    return d;
  }

  /**
   * True when nothing can be allowed to `principal`: the default is deny and no allow rule
   * applies to a subject it matches. A front door that authenticates once per connection (the remote API) asks such an
   * anonymous client for credentials up front.
   */
  allowsNothing(principal: Principal): boolean {
    return this.#policy !== undefined && !this.#policy.grantsAnything(principal.subjects);
  }

  /**
   * Per-key filter for what a read returns (`query` replies) or a subscription delivers
   * (`declare_subscriber` samples): true when the whole of `key` is allowed.
   */
  mayRead(principal: Principal, message: "query" | "declare_subscriber", key: string): boolean {
    return this.decide(principal, message, key) === "allow";
  }

  /**
   * The error for a refused operation: `unauthenticated` for an anonymous client when
   * credentials could help, else `forbidden`. `what` names the operation for the message.
   */
  refusal(principal: Principal, what: string): ZestError {
    if (principal.user === undefined && this.wantsCredentials)
      return new ZestError("unauthenticated", `${what} needs credentials (HTTP Basic or Bearer)`);
    return new ZestError(
      "forbidden",
      `${principal.user === undefined ? "an anonymous client" : `user "${principal.user}"`} may not ${what}`,
    );
  }

  #principal(
    user: string | undefined,
    address: string,
    link: Pick<Identity, "localAddress" | "protocol" | "zid">,
  ): Principal {
    const name = user ?? "";
    let byAddress = this.#principals.get(name);
    if (byAddress === undefined) {
      byAddress = new Map();
      this.#principals.set(name, byAddress);
    }
    // Link subjects make the link part of who the client is; without them the address is enough.
    const policy = this.#policy;
    const key = policy?.usesLinks ? `${address} ${link.localAddress} ${link.protocol} ${link.zid}` : address;
    let p = byAddress.get(key);
    if (p === undefined) {
      p = {
        user,
        address,
        subjects:
          policy === undefined
            ? new Uint8Array(0)
            : policy.subjectsOf({
                user,
                address,
                localAddress: link.localAddress,
                protocol: link.protocol,
                zid: link.zid,
              }),
        decisions: MESSAGES.map(() => new Map()),
      };
      if (byAddress.size >= PRINCIPALS) byAddress.clear();
      byAddress.set(key, p);
    }
    return p;
  }
}

/** `::ffff:127.0.0.1` → `127.0.0.1`, so IPv4 ranges match clients of a dual-stack socket. */
export function normalizeAddress(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}
