import type { Buffer } from "node:buffer";
import type { AdminLayout, AdminSources } from "../admin/admin-layout.js";
import type { Reply } from "../core/reply.js";
import type { Session } from "../core/session.js";
import type { StorageManager } from "../storage/manager.js";
import type { KeyExprLimits } from "../keyexpr/index.js";
import type { Sample } from "../core/sample.js";
import type { Layout, Rendered } from "./layout.js";
import type { OpenApiPart } from "./openapi.js";

/**
 * One face of the REST gateway. The variants differ only here: how a URL path becomes a key
 * expression, how a content type becomes an encoding, and how replies are rendered.
 */
export interface RestCodec {
  /** Status of a successful PUT/PATCH/DELETE (A: 200, B: 204). */
  readonly writeStatus: number;
  /**
   * Whether a write's answer, a refusal too, carries `Access-Control-Allow-Origin: *` even for a
   * request with no `Origin` (B: 0.4's plugin set it on every response; A: 0.6's CORS middleware
   * only answered requests that carried an `Origin`). docs/rest-gateway.md §A.4, §B.4.
   */
  readonly corsOnEveryWrite: boolean;
  /** Whether `GET /` from a browser answers the explorer page (A) rather than the key `/` (docs/explorer.md). */
  readonly explorer: boolean;
  /**
   * Whether `parameters` hands the query string on as it is (A): a write's lifetime read from it
   * can then be kept and compared in place for the next write with the same query string.
   */
  readonly verbatimParameters: boolean;
  /**
   * Whether `pathToKey` returns a key made by `toKeyExpr` with the limits it was given (A): a
   * write hands it to `Session.putKey`/`deleteKey`, which do not canonize it a second time.
   */
  readonly canonicalKeys: boolean;
  /** Whether every single-key GET answers an `ETag` (A); B answers one only to a GET with condition headers, keeping 0.4's headers otherwise. Conditional writes work in both. */
  readonly etags: boolean;
  /** Where this variant's admin space takes storage configs, as a client writes it (for error messages; the admin layout owns it). */
  adminConfigPath(zid: string): string;
  /**
   * The key expression named by a URL path (raw, starting with `/`), with the admin aliases
   * resolved against the router id. `write` is true for PUT/PATCH/DELETE. Throws a 400 ZestError,
   * or a 414 one (`too_long`) past the length limit of `limits` (default: the default limits).
   */
  pathToKey(path: string, zid: string, write: boolean, limits?: KeyExprLimits): string;
  /** The selector parameters the queryables receive, from the raw query string. */
  parameters(query: string): string;
  /** The encoding stored for a write with this `Content-Type`. */
  encodingFor(contentType: string | undefined): string;
  /**
   * The body of a GET as a list of entries (`layout.ts`), ordered as the variant shows them:
   * written out as one string (`renderLayout`, in slices for a large answer), or streamed in
   * chunks. `html` when the client asked for `text/html`. `expires` (`?_expires=true`): each JSON
   * entry also names its deadline (docs/ttl-and-leases.md, "Seeing a lifetime").
   */
  layout(replies: Reply[], html: boolean, expires?: boolean): Promise<Layout>;
  /**
   * The layout of stored samples sorted by key, the same as `layout` of their replies gives, for
   * a variant that shows entries in key order, one each (A): a wide answer is then laid out batch
   * by batch as a storage scans it (`Router.scanStored`). Absent: answers are always queried.
   */
  layoutSamples?(samples: readonly Sample[], html: boolean, expires?: boolean): Layout;
  /**
   * The JSON body of a GET with a handful of replies (a single key's), rendered at once: the same
   * bytes `renderLayout(await layout(replies, false))` gives, for the synchronous single-key path. Absent: that path
   * is not taken.
   */
  renderNow?(replies: readonly Reply[]): Rendered;
  /**
   * One SSE message for a sample, as bytes: computed once per sample (the codec caches it) and
   * written as is to every stream, so 1,000 subscribers cost one rendering and one UTF-8 encoding.
   * Absent: the variant has no SSE, and `Accept: text/event-stream` is an ordinary GET (B).
   */
  sseEvent?(sample: Sample): Buffer;
  /**
   * The SSE message of a put sample for a stream opened with `?_expires=true`: its entry names
   * the deadline, or null. Absent: such streams get `sseEvent`'s.
   */
  sseEventExpires?(sample: Sample): Buffer;
}

/**
 * A REST variant: everything that differs between variants, in one registered object (the list
 * is `rest/variants.ts`): its codec, the admin-space layout that goes with it, and its part of
 * the OpenAPI document. The config schema's choices, `--rest-variant`'s choices and the admin
 * layouts `adminspace.layout` may name all come from the registered names, so a variant is one
 * file plus one line (docs/rest-gateway.md, "Variants").
 */
export interface RestVariant {
  /** The name `--rest-variant`, `plugins.rest.variant` and `adminspace.layout` use. */
  readonly name: string;
  /** One line for the help and the configuration reference ("zenoh 0.6 style"). */
  readonly description: string;
  readonly codec: RestCodec;
  /** Builds this variant's admin space on `session` (started by the runtime). */
  admin(session: Session, manager: StorageManager, sources: AdminSources): AdminLayout;
  /** What the OpenAPI document says that only this variant says (`openapi.ts`). */
  readonly openApi: OpenApiPart;
}
