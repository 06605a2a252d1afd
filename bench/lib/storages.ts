/**
 * `--cfg` arguments that give a zest router exactly the storages a benchmark wants (and not the
 * default memory storage on `**`).
 */

/** `--cfg plugins/storage_manager/storages:{name:spec,...}` (`{}`: no storage at all). */
export function storagesCfg(storages: Record<string, string>): string[] {
  const body = Object.entries(storages)
    .map(([name, spec]) => `${name}:${spec}`)
    .join(",");
  return ["--cfg", `plugins/storage_manager/storages:{${body}}`];
}

/** A memory storage on `keyExpr`. */
export function memory(keyExpr: string): string {
  return `{key_expr:${JSON.stringify(keyExpr)},volume:"memory"}`;
}

/** A SQLite storage on `keyExpr` in the file `path`. */
export function sqlite(keyExpr: string, path: string): string {
  return `{key_expr:${JSON.stringify(keyExpr)},volume:{id:"sqlite",path:${JSON.stringify(path)}}}`;
}

/** A `jetstream` volume storage on `keyExpr` whose bucket has `replicas` replicas. */
export function jetstreamVolume(keyExpr: string, replicas: number): string {
  return `{key_expr:${JSON.stringify(keyExpr)},volume:{id:"jetstream",replicas:${replicas}}}`;
}
