// Writes the README's configuration reference from the schema (src/config/schema.ts).
import { readFileSync, writeFileSync } from "node:fs";
import { configReference, REFERENCE_END, REFERENCE_START } from "../src/config/reference.js";

const README = new URL("../README.md", import.meta.url);
const text = readFileSync(README, "utf8");
const start = text.indexOf(REFERENCE_START);
const end = text.indexOf(REFERENCE_END);
if (start === -1 || end < start) {
  console.error(`README.md has no ${REFERENCE_START} ... ${REFERENCE_END} block`);
  process.exit(1);
}
writeFileSync(README, `${text.slice(0, start + REFERENCE_START.length)}\n${configReference()}\n${text.slice(end)}`);
console.log("README.md: configuration reference written");
