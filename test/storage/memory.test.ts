import { before, describe } from "node:test";
import { silentLogger } from "../../src/core/log.js";
import type { Volume } from "../../src/storage/backend.js";
import { memoryDriver } from "../../src/storage/volumes/memory.js";
import { runStorageContract } from "./contract.js";

describe("memory volume: the storage contract", () => {
  let volume: Volume;
  before(async () => {
    volume = await memoryDriver.open("memory", {}, { logger: silentLogger });
  });
  runStorageContract({
    name: "memory",
    open: (name, options = {}) => volume.createStorage(name, "**", options),
    // The memory volume takes no options.
    badOptions: [],
  });
});
