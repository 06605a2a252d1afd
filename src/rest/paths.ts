import { ZestError } from "../core/errors.js";

/** `?` and `#`, escaped: they cannot be in a key expression, so the escape itself is kept. */
const KEPT_ESCAPE = /(%3f|%23)/i;

/**
 * Percent-decodes a URL path, so `demo/a%20b` names the key `demo/a b` (keys written through
 * the library API are reachable over HTTP). `%3F` and `%23` stay as they are (uppercased): `?`
 * and `#` are forbidden in key expressions, so the escapes are the key's own characters, as in
 * zenoh 0.6, which decoded nothing. Malformed escapes are a 400.
 */
export function decodePath(path: string): string {
  if (!path.includes("%")) return path;
  try {
    // Split around the kept escapes (the capture keeps them, at the odd indexes).
    const parts = path.split(KEPT_ESCAPE);
    if (parts.length === 1) return decodeURIComponent(path);
    return parts.map((part, i) => (i % 2 === 1 ? part.toUpperCase() : decodeURIComponent(part))).join("");
  } catch {
    throw ZestError.badRequest(`malformed percent-encoding in path "${path}"`);
  }
}
