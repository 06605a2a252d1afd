import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { findUp } from "./find-up.js";

/**
 * zest's version, from the package.json of the package this module belongs to: the nearest one
 * above it (beside `dist/` when built; beside `src/` for a compiled copy of the tests, which has
 * none of its own).
 */
export const VERSION: string = (
  JSON.parse(readFileSync(findUp(dirname(fileURLToPath(import.meta.url)), "package.json"), "utf8")) as {
    version: string;
  }
).version;
