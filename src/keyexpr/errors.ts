/**
 * The one error type of the key-expression module. `core/errors.ts` recognises it by its
 * `name` and maps it to HTTP 400, so this module does not depend on core.
 */

/** Which rule an invalid key expression (or legacy path) breaks. */
export type KeyExprErrorKind =
  | "Empty"
  | "EmptyChunk"
  | "StarInChunk"
  | "LoneDollarStar"
  | "SingleStarAfterDoubleStar"
  | "DoubleStarAfterDoubleStar"
  | "DollarAfterDollar"
  | "SharpOrQMark"
  | "UnboundDollar"
  | "InvalidPath"
  /** Longer than the router's limit (a size limit, not a syntax rule: HTTP 414). */
  | "TooLong"
  /** More chunks than the router's limit. */
  | "TooManyChunks";

/** The human-readable reason for each rule, used to build one-line messages. */
const REASONS: Readonly<Record<KeyExprErrorKind, string>> = {
  Empty: "the empty string is not a key expression",
  EmptyChunk: "empty chunks are forbidden, as are leading and trailing slashes",
  StarInChunk: "`*` may only be a whole chunk (`*` or `**`); inside a chunk write `$*`",
  LoneDollarStar: "a chunk that is exactly `$*` must be written `*`",
  SingleStarAfterDoubleStar: "`**/*` is not canonical, write `*/**`",
  DoubleStarAfterDoubleStar: "`**/**` is not canonical, write `**`",
  DollarAfterDollar: "`$*` may not be followed by `$` (write `$*` once)",
  SharpOrQMark: "`#` and `?` are forbidden in key expressions",
  UnboundDollar: "`$` may only appear as part of `$*`",
  InvalidPath: "invalid path",
  TooLong: "too long",
  TooManyChunks: "too many chunks",
};

/** Inputs longer than this are shortened in messages (they may be kilobytes long). */
const QUOTED_MAX = 100;

function quote(input: string): string {
  return JSON.stringify(input.length > QUOTED_MAX ? `${input.slice(0, QUOTED_MAX)}…` : input);
}

/**
 * Thrown for an invalid key expression; the message is one line naming the rule broken and the
 * input, e.g. `invalid key expression "a//b": empty chunks are forbidden, as are leading and
 * trailing slashes`.
 */
export class KeyExprError extends Error {
  /** The rule that was broken. */
  readonly kind: KeyExprErrorKind;
  /** The string the caller gave (before any canonization). */
  readonly input: string;

  /**
   * @param kind the rule broken
   * @param input the offending input, quoted in the message
   * @param reason overrides the standard reason for `kind` (used for legacy paths)
   */
  constructor(kind: KeyExprErrorKind, input: string, reason?: string) {
    const what = kind === "InvalidPath" ? "invalid path" : "invalid key expression";
    super(`${what} ${quote(input)}: ${reason ?? REASONS[kind]}`);
    this.name = "KeyExprError";
    this.kind = kind;
    this.input = input;
  }
}
