/**
 * The explorer page (docs/explorer.md): a browser GET of `/` with `Accept: text/html` gets a
 * small single-page app, served by zest itself, that reads and writes through the ordinary
 * Variant A REST API. Its assets live under the empty path with a `_explorer` query parameter
 * (`/?_explorer=app.js`), which no key can collide with: the empty key expression is invalid.
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { EXPLORER_CSS, EXPLORER_HTML } from "./page.js";

/** No inline script or style, no foreign origin, no framing, no form posting anywhere. */
export const EXPLORER_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The query parameter naming an asset on the empty path. */
export const ASSET_PARAM = "_explorer";

interface Asset {
  readonly type: string;
  readonly body: Buffer;
  readonly etag: string;
}

let assets: Map<string, Asset> | undefined;

/**
 * Serves the page or one of its assets and returns true, or returns false (and touches nothing)
 * when the request is not for the explorer. Call it early for GET and HEAD requests.
 */
export function serveExplorer(req: IncomingMessage, res: ServerResponse): boolean {
  const url = req.url;
  // Only the empty path: every other path names a key expression.
  if (url === undefined || url.charCodeAt(0) !== 0x2f || (url.length > 1 && url.charCodeAt(1) !== 0x3f)) return false;
  const method = req.method;
  if (method !== "GET" && method !== "HEAD") return false;
  const name = assetName(url);
  if (name === undefined) {
    if (!acceptsHtml(req.headers.accept)) return false;
  } else if (name === "index.html") {
    return false; // only asked for by its own name through the Accept header
  }
  const asset = loadAssets().get(name ?? "index.html");
  if (asset === undefined) {
    const body = `no explorer asset named "${name}"\n`;
    res.writeHead(404, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body) });
    res.end(method === "HEAD" ? undefined : body);
    return true;
  }
  const headers: Record<string, string | number> = {
    "content-type": asset.type,
    "cache-control": "no-cache",
    etag: asset.etag,
    "content-security-policy": EXPLORER_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    vary: "Accept",
  };
  if (req.headers["if-none-match"] === asset.etag) {
    res.writeHead(304, headers);
    res.end();
    return true;
  }
  headers["content-length"] = asset.body.length;
  res.writeHead(200, headers);
  res.end(method === "HEAD" ? undefined : asset.body);
  return true;
}

/** The `_explorer` parameter of an empty-path URL, if any. */
function assetName(url: string): string | undefined {
  if (url.length <= 2) return undefined;
  for (const part of url.slice(2).split("&")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq) === ASSET_PARAM) return part.slice(eq + 1);
  }
  return undefined;
}

/** A browser navigation: `text/html` is the first type it accepts. */
function acceptsHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  return /^\s*text\/html\s*(?:[;,]|$)/i.test(accept);
}

/** The page's files, read once: the app script is the bundle of `client/` beside this module. */
function loadAssets(): Map<string, Asset> {
  if (assets) return assets;
  const map = new Map<string, Asset>();
  const add = (name: string, type: string, body: string): void => {
    const buf = Buffer.from(body);
    map.set(name, { type, body: buf, etag: `"${createHash("sha256").update(buf).digest("base64url").slice(0, 22)}"` });
  };
  add("index.html", "text/html; charset=utf-8", EXPLORER_HTML);
  add("app.css", "text/css; charset=utf-8", EXPLORER_CSS);
  add("app.js", "text/javascript; charset=utf-8", readClientScript());
  assets = map;
  return assets;
}

function readClientScript(): string {
  // Built: dist/rest/explorer/app.js, esbuild's bundle of client/ (scripts/build-explorer.mjs).
  // From the sources (tsx), the last build's copy; from the tests' compiled copy
  // (.test-build/src/...), the same.
  const candidates = [
    new URL("./app.js", import.meta.url),
    new URL("../../../dist/rest/explorer/app.js", import.meta.url),
    new URL("../../../../dist/rest/explorer/app.js", import.meta.url),
  ];
  for (const file of candidates) {
    if (existsSync(file)) return readFileSync(file, "utf8").replace(/\n\/\/# sourceMappingURL=.*\s*$/, "\n");
  }
  return 'document.body.textContent = "The explorer script is missing: run npm run build.";\n';
}
