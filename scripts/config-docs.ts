// Writes the configuration reference of docs/configuration.md from the schema (src/config/schema.ts).
import { readFileSync, writeFileSync } from "node:fs";
import { configReference, REFERENCE_END, REFERENCE_START } from "../src/config/reference.js";

const PAGE = new URL("../docs/configuration.md", import.meta.url);
const text = readFileSync(PAGE, "utf8");
const start = text.indexOf(REFERENCE_START);
const end = text.indexOf(REFERENCE_END);
if (start === -1 || end < start) {
  console.error(`docs/configuration.md has no ${REFERENCE_START} ... ${REFERENCE_END} block`);
  process.exit(1);
}
writeFileSync(PAGE, `${text.slice(0, start + REFERENCE_START.length)}\n${configReference()}\n${text.slice(end)}`);
console.log("docs/configuration.md: configuration reference written");
