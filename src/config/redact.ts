/**
 * Credentials never leave the router: the one filter every admin view and log line goes
 * through. It hides the values of credential-like options and the user information of URLs
 * (see docs/configuration.md).
 */

import { REDACTED, redactText } from "../core/secrets.js";

export { REDACTED, redactText };

/**
 * Option names whose values are credentials: exactly one of these words, or ending in
 * `_<word>` (`api_key`, `auth_token`), whatever the case. `key_expr` and `key_size` are not.
 */
const SECRET_WORDS = [
  "password",
  "passwd",
  "pass",
  "token",
  "secret",
  "key",
  "credentials",
  "credential",
  "auth",
  "authorization",
  "private",
  "cookie",
  "jwt",
  "nkey",
  "seed",
];
const SECRET_NAME = new RegExp(`(^|_)(${SECRET_WORDS.join("|")})$`, "i");

/** True when an option named `name` holds a credential. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/**
 * A copy of `value` fit for showing: credential-like keys have their value replaced, URLs lose
 * their user information. Objects come back with a null prototype, so any name is a plain key.
 */
export function redact(value: unknown): unknown {
  if (typeof value === "string") return redactText(value);
  if (Array.isArray(value)) return value.map(redact);
  if (typeof value !== "object" || value === null) return value;
  const out = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of Object.entries(value)) out[k] = isSecretName(k) && v !== undefined ? REDACTED : redact(v);
  return out;
}
