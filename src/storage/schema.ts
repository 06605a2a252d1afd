/**
 * The schema of the `plugins.storage_manager` section, and of the storage manager's saved state
 * (`<data_dir>/storage_manager.json`). A volume's and a storage's own options are not here: each
 * driver owns their schemas (`VolumeDriver.options`), checked when the volume or storage is put.
 */
import { z } from "zod";
import { closed, names } from "../config/closed-schema.js";
import { VOLUME_KEYS } from "./options.js";

/** A volume: `backend` (or Variant B's `lib`) names the driver; the other keys are its driver's options. */
export const volumeSchema = z
  .looseObject(VOLUME_KEYS)
  .describe("a volume; the other keys are options of its driver (see the volume options below)");

/** A storage: a key expression over a volume. */
export const storageSchema = closed(
  {
    key_expr: z.string().describe("key expression the storage holds"),
    volume: z
      .union([z.string(), z.looseObject({ id: z.string().min(1) })])
      .describe("volume name, or `{ id, ...storage options of its driver }`"),
    selector: z.string().optional().describe("Variant B: the selector as it was written (shown back in listings)"),
    complete: z
      .union([z.boolean(), z.enum(["true", "false"])])
      .optional()
      .describe(
        "zenoh's `complete`: the storage holds every key of its key expression, so its queryable is declared complete, to zest's clients, other routers and a joined zenoh network (docs/storages.md); off unless set, as zenoh's",
      ),
    replication: z
      .union([z.boolean(), z.looseObject({})])
      .optional()
      .describe(
        "anti-entropy with this storage's replicas on other routers: `false` turns it off; `{ interval, sub_intervals, hot, warm, propagation_delay, tombstone_retention }` (docs/replication.md); default on with a fabric",
      ),
  },
  "a storage",
);

export const storageManagerSchema = closed(
  {
    volumes: names(volumeSchema, "volumes by name").optional(),
    storages: names(storageSchema, "storages by name").optional(),
    allowed_paths: z
      .array(z.string())
      .optional()
      .describe("directories (besides `data_dir`) where volumes created at run time may open files"),
    allowed_hosts: z
      .array(z.string())
      .optional()
      .describe(
        "hosts (`host` or `host:port`) volumes created at run time may reach; default: those of the configured volumes",
      ),
  },
  "storages and volumes",
);

/** `<data-dir>/storage_manager.json`: run-time changes, and what was removed from the config. */
export const savedStateSchema = closed(
  {
    volumes: names(volumeSchema, "volumes by name").optional(),
    storages: names(storageSchema, "storages by name").optional(),
    removedStorages: z.array(z.string()).optional(),
    removedVolumes: z.array(z.string()).optional(),
  },
  "saved storage manager state",
);
