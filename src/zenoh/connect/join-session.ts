/**
 * zest's session on a zenoh router it joined (docs/zenoh-network.md), as a zenoh *client* of
 * that router. It is a `ZenohSession` seen from the other end: what the router declares to zest
 * (its subscribers, queryables and tokens, in answer to zest's INTEREST) is held on a face as a
 * connected client's declarations are, so zest's samples and queries reach the router's side
 * once per face; what the router sends (PUSH, REQUEST) enters zest's router as from any client,
 * never back to this session's own declarations. What zest's own sessions need is declared to
 * the router by a `DeclarationMirror`.
 */
import type { ClientPolicy } from "../../access/client-policy.js";
import type { Logger } from "../../core/log.js";
import type { Connectivity } from "../../core/ports.js";
import type { Query } from "../../core/query.js";
import type { Sample } from "../../core/sample.js";
import type { Session } from "../../core/session.js";
import type { Declaration } from "../codec/declarations.js";
import { encodeDeclare, encodeInterest, InterestOption, type NetworkMsg } from "../codec/network.js";
import type { PeerInfo, ZenohLink } from "../transport/transport.js";
import { type SessionLimits, ZenohSession } from "../session.js";
import type { NetworkBridge } from "./bridge.js";
import { DeclarationMirror } from "./mirror.js";

/** The id of the one INTEREST zest sends the joined router. */
const INTEREST_ID = 1;

export class JoinSession extends ZenohSession {
  private mirror: DeclarationMirror | undefined;
  /**
   * Queries already sent to the router, by their selector (the router makes one `Query` per
   * queryable, all with the selector of the get): one REQUEST per get, however many of the
   * network's queryables match.
   */
  private readonly sent = new WeakSet<object>();

  constructor(
    /** The link to the joined router (the base class keeps its own, privately). */
    private readonly out: ZenohLink,
    peer: PeerInfo,
    session: Session,
    private readonly changes: Connectivity,
    logger: Logger,
    limits: SessionLimits,
    policy: ClientPolicy,
    /** Which router of the fabric passes samples between the network and the fabric. */
    private readonly bridge: NetworkBridge,
  ) {
    super(out, peer, session, changes, logger, limits, policy);
    this.joinLogger = logger;
  }

  private readonly joinLogger: Logger;

  /**
   * Asks the router for its subscribers, queryables and tokens on every key, now and as they
   * change (zenoh's routers declare to a client only what it showed interest in), and declares
   * zest's own.
   */
  start(): void {
    const w = this.out.startMessage(false);
    if (w !== undefined) {
      encodeInterest(w, {
        id: INTEREST_ID,
        current: true,
        future: true,
        options:
          InterestOption.KEYEXPRS | InterestOption.SUBSCRIBERS | InterestOption.QUERYABLES | InterestOption.TOKENS,
      });
      this.out.endMessage();
    }
    this.mirror = new DeclarationMirror({
      session: this.face.session,
      connectivity: this.changes,
      send: (d) => this.sendDecl(d),
      ownsToken: (k) => this.face.ownsToken(k),
      bridge: this.bridge,
    });
    this.mirror.start();
  }

  /** What zest declared to the router (the status). */
  get mirrored(): { subscribers: number; queryables: number; tokens: number } {
    return this.mirror?.declared ?? { subscribers: 0, queryables: 0, tokens: 0 };
  }

  private sendDecl(d: Declaration): void {
    this.joinLogger.debug(
      { decl: d.kind, key: "key" in d ? d.key?.suffix : undefined },
      "zenoh declared to the joined router",
    );
    const w = this.out.startMessage(false);
    if (w === undefined) return;
    encodeDeclare(w, d);
    this.out.endMessage();
  }

  /**
   * zest routers of one fabric joined to one zenoh network (docs/zenoh-network.md, "Clusters"):
   * each sends the network the samples it stamped itself; a sample another joined router stamped
   * is that router's to send; one of a router that did not join (or of a zenoh client's own
   * clock) is sent by the elected joined router. The network's own samples never
   * reach this sink: they enter by this face, and a joined router drops the fabric's copies.
   */
  override sample(subscriberId: number, sample: Sample): void {
    const ts = sample.timestamp;
    if (ts !== undefined && !this.bridge.sends(ts.id)) return;
    super.sample(subscriberId, sample);
  }

  /** A sample from the network that a fabric peer stamped already came to this router through the fabric. */
  override onMessage(msg: NetworkMsg): void {
    if (msg.kind === "push" && msg.body.timestamp !== undefined) {
      const peers = this.changes.peers();
      if (peers.length > 0) {
        const id = msg.body.timestamp.id.toUpperCase();
        if (peers.some((p) => p.toUpperCase() === id)) return;
      }
    }
    super.onMessage(msg);
    // The network's token gone, a token of this router's own on the same key stays alive without
    // a liveliness change to say so: the mirror looks again, and declares it now.
    if (msg.kind === "declare" && msg.decl.kind === "untoken") this.mirror?.refresh();
  }

  override query(queryableId: number, id: number, query: Query): boolean {
    // The router hands a REQUEST to all its matching queryables: a second one would repeat the replies.
    if (this.sent.has(query.selector)) return false;
    // A query from another router of the fabric that joined is that router's to send the network:
    // sent on, it would come back to the routers of the fabric through the zenoh router, round and
    // round. One from a router that did not join is the elected router's to send, as its samples.
    if (query.fromAnotherRouter && (query.fromRouter === undefined || !this.bridge.sends(query.fromRouter)))
      return false;
    this.sent.add(query.selector);
    return super.query(queryableId, id, query);
  }

  override onClose(): void {
    this.mirror?.stop();
    super.onClose();
  }
}
