/**
 * The write form (docs/explorer.md, "Who may write"): put a key with an encoding, delete a key,
 * and show the router's reason when it refuses.
 */
import { $, armOrRun, type Entry, reasonOf, status, urlOf } from "./dom.js";
import { isBinary } from "./values.js";

/** A PUT or DELETE through the Variant A REST API of the router that served the page. */
export async function write(
  method: "PUT" | "DELETE",
  key: string,
  body?: string,
  contentType?: string,
): Promise<Response> {
  const headers: Record<string, string> = {};
  if (contentType) headers["content-type"] = contentType;
  return fetch(urlOf(key), { method, headers, ...(body === undefined ? {} : { body }) });
}

/** Puts a key in the write form, ready to edit (binary values are not editable as text). */
export function fillWriteForm(e: Entry): void {
  ($("w-key") as HTMLInputElement).value = e.key;
  if (isBinary(e)) return;
  ($("w-enc") as HTMLInputElement).value = e.encoding;
  ($("w-value") as HTMLTextAreaElement).value =
    typeof e.value === "string" ? e.value : JSON.stringify(e.value, null, 2);
}

/** Wires the write form's put and delete. */
export function setupWriteForm(): void {
  const form = $<HTMLFormElement>("write-form");
  const out = $("w-status");
  const keyOf = (): string => ($("w-key") as HTMLInputElement).value.trim();
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const key = keyOf();
    const enc = ($("w-enc") as HTMLInputElement).value.trim();
    void write("PUT", key, ($("w-value") as HTMLTextAreaElement).value, enc || undefined).then(
      async (res) => status(out, res.ok, res.ok ? `Put ${key}` : `Put refused: ${await reasonOf(res)}`),
      (err: Error) => status(out, false, `Put failed: ${err.message}`),
    );
  });
  const del = $<HTMLButtonElement>("w-delete");
  del.addEventListener("click", () => {
    const key = keyOf();
    if (!key) {
      status(out, false, "Give the key to delete.");
      return;
    }
    armOrRun(del, "Delete", () => {
      void write("DELETE", key).then(
        async (res) => status(out, res.ok, res.ok ? `Deleted ${key}` : `Delete refused: ${await reasonOf(res)}`),
        (err: Error) => status(out, false, `Delete failed: ${err.message}`),
      );
    });
  });
}
