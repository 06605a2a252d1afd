import { ZestError } from "../core/errors.js";

/** `?` and `#`, escaped: they cannot be in a key expression, so the escape itself is kept. */
const KEPT_ESCAPE = /%(3f|23)/gi;

/**
 * Percent-decodes a URL path, so `demo/a%20b` names the key `demo/a b` (keys written through
 * the library API are reachable over HTTP). `%3F` and `%23` stay as they are (uppercased): `?`
 * and `#` are forbidden in key expressions, so the escapes are the key's own characters, as in
 * zenoh 0.6, which decoded nothing. Malformed escapes are a 400.
 */
export function decodePath(path: string): string {
  if (!path.includes("%")) return path;
  try {
    KEPT_ESCAPE.lastIndex = 0;
    if (!KEPT_ESCAPE.test(path)) return decodeURIComponent(path);
    KEPT_ESCAPE.lastIndex = 0;
    let out = "";
    let from = 0;
    for (let m = KEPT_ESCAPE.exec(path); m !== null; m = KEPT_ESCAPE.exec(path)) {
      out += decodeURIComponent(path.slice(from, m.index)) + m[0].toUpperCase();
      from = m.index + 3;
    }
    return out + decodeURIComponent(path.slice(from));
  } catch {
    throw ZestError.badRequest(`malformed percent-encoding in path "${path}"`);
  }
}
