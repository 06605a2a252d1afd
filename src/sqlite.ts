/** `zest/sqlite`: the SQLite volume driver, loaded eagerly (`import "zest"` loads it on first use). */
export { sqliteDriver, isSqliteFileOpen } from "./storage/volumes/sqlite.js";
