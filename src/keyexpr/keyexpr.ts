/**
 * The `KeyExpr` value class, shaped like zenoh-ts's: immutable, validated at construction.
 */
import { canonize } from "./canon.js";
import { KeyExprError } from "./errors.js";
import { includes } from "./include.js";
import { intersects } from "./intersect.js";
import { isWild, validate } from "./validate.js";

/**
 * A key expression as zest's APIs accept it, declared once: a `KeyExpr`, or a string (the
 * `KeyExpr` methods validate it as it is; `Session` calls autocanonize it).
 */
export type IntoKeyExpr = KeyExpr | string;

/** The canonical string of `other`, validating a plain string (no canonization, like the constructor). */
function str(other: IntoKeyExpr): string {
  if (typeof other === "string") {
    validate(other);
    return other;
  }
  return other.toString();
}

/** Immutable, validated key expression (shaped like zenoh-ts). */
export class KeyExpr {
  readonly #ke: string;
  /** True when the KE contains any wildcard (`*`, `**`, `$*`). */
  readonly isWild: boolean;

  /** Validates `s` as a canonical KE (no canonization); throws KeyExprError. */
  constructor(s: string) {
    validate(s);
    this.#ke = s;
    this.isWild = isWild(s);
    // Frozen so the value can be shared between subscribers, storages and callers safely.
    Object.freeze(this);
  }

  /** Canonizes `s` (§1.3 plus the zest in-chunk `*` extension) and wraps it; throws KeyExprError. */
  static autocanonize(s: string): KeyExpr {
    return new KeyExpr(canonize(s));
  }

  /** The canonical string form. */
  toString(): string {
    return this.#ke;
  }

  /** Same as toString, so a KeyExpr serializes as its string. */
  toJSON(): string {
    return this.#ke;
  }

  /** True when some key is denoted by both this and `other`. */
  intersects(other: IntoKeyExpr): boolean {
    return intersects(this.#ke, str(other));
  }

  /** True when every key denoted by `other` is denoted by this (sound, incomplete as §1.5). */
  includes(other: IntoKeyExpr): boolean {
    return includes(this.#ke, str(other));
  }

  /** True when both denote the same set, i.e. (canonical forms being unique) are the same string. */
  equals(other: IntoKeyExpr): boolean {
    return this.#ke === str(other);
  }

  /** `autocanonize(this + "/" + other)`; `other` may be any string that makes the result valid. */
  join(other: IntoKeyExpr): KeyExpr {
    return KeyExpr.autocanonize(`${this.#ke}/${other.toString()}`);
  }

  /**
   * `autocanonize(this + other)`. Throws KeyExprError (StarInChunk) when the junction would glue
   * a `**` to text or form `**` from two stars, as in `a/**` + `b`, `a` + `**\/b` or `a/*` + `*`:
   * the zest in-chunk `*` reading would otherwise silently turn that `**` into `$*`. Rust
   * refuses `*` + `*` for the same reason.
   */
  concat(other: IntoKeyExpr): KeyExpr {
    const right = other.toString();
    const left = this.#ke;
    if (right.length === 0) return this;
    const lastSlash = left.lastIndexOf("/");
    const lastChunk = left.slice(lastSlash + 1);
    let firstEnd = right.indexOf("/");
    if (firstEnd === -1) firstEnd = right.length;
    const firstPiece = right.slice(0, firstEnd);
    const glued =
      (left.endsWith("*") && right.startsWith("*")) ||
      (lastChunk === "**" && firstPiece.length > 0) ||
      firstPiece === "**";
    if (glued) {
      throw new KeyExprError(
        "StarInChunk",
        left + right,
        `concatenating ${JSON.stringify(left)} and ${JSON.stringify(right)} would glue \`**\` to other text; join with "/" instead`,
      );
    }
    return KeyExpr.autocanonize(left + right);
  }
}
