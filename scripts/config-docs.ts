// Writes the generated blocks of docs/configuration.md: the configuration reference (from the root
// schema, src/zest-config.ts) and the volume options reference (from each built-in driver's own schemas).
import { readFileSync, writeFileSync } from "node:fs";
import { configReference, REFERENCE_END, REFERENCE_START } from "../src/config/reference.js";
import { defaultStartOptions } from "../src/defaults.js";
import { VOLUME_OPTIONS_END, VOLUME_OPTIONS_START, volumeOptionsReference } from "../src/storage/options-reference.js";
import { memoryDriver } from "../src/storage/volumes/memory.js";
import { configSchema } from "../src/zest-config.js";

const PAGE = new URL("../docs/configuration.md", import.meta.url);

function replaceBlock(text: string, start: string, end: string, body: string): string {
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  if (a === -1 || b < a) {
    console.error(`docs/configuration.md has no ${start} ... ${end} block`);
    process.exit(1);
  }
  return `${text.slice(0, a + start.length)}\n${body}\n${text.slice(b)}`;
}

let text = readFileSync(PAGE, "utf8");
text = replaceBlock(text, REFERENCE_START, REFERENCE_END, configReference(configSchema));
const drivers = [memoryDriver, ...(defaultStartOptions().drivers ?? [])];
text = replaceBlock(text, VOLUME_OPTIONS_START, VOLUME_OPTIONS_END, volumeOptionsReference(drivers));
writeFileSync(PAGE, text);
console.log("docs/configuration.md: configuration and volume options references written");
