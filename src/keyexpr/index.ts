/**
 * Key expressions: validation, canonization, intersection and inclusion (docs/key-expressions.md §1),
 * legacy Variant B paths (§2), and the chunk trie that indexes declarations (§3).
 */
export { KeyExprError, type KeyExprErrorKind } from "./errors.js";
export { validate, isValid, isWild, checkKeyExpr, isVerbatimChunk } from "./validate.js";
export { canonize } from "./canon.js";
export { chunkIntersects, chunkIncludes } from "./chunk.js";
export { intersects, intersectsChunks } from "./intersect.js";
export { includes, includesChunks } from "./include.js";
export { KeyExpr, type IntoKeyExpr } from "./keyexpr.js";
export { pathToKeyExpr, keyExprToPath } from "./legacy.js";
export { KeTrie } from "./trie.js";
export { literalPrefix } from "./prefix.js";
export { canonicalKeyExpr } from "./canonical.js";
export { checkKeyExprLimits, keyExprLimits, DEFAULT_KEYEXPR_LIMITS, type KeyExprLimits } from "./limits.js";
export { KeyIndex, KeyWalk, type IndexChange } from "./key-index.js";
