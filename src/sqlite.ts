/** `zest/sqlite`: the SQLite volume driver, loaded eagerly (`import "zest"` loads it on first use). */
export { sqliteDriver } from "./storage/volumes/sqlite.js";
