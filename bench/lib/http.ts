/** Small HTTP helpers for setting benchmarks up (not for measuring). */

/** PUTs `body` on `url + path` and fails loudly on anything but 2xx. */
export async function httpPut(url: string, path: string, body: string, contentType: string): Promise<void> {
  const res = await fetch(url + path, { method: "PUT", body, headers: { "content-type": contentType } });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`PUT ${path} answered ${res.status}`);
}

/** GETs `url + path` as text and fails loudly on anything but 2xx. */
export async function httpGetText(url: string, path: string): Promise<string> {
  const res = await fetch(url + path);
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${path} answered ${res.status}: ${text}`);
  return text;
}
