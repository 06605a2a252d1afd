/** Payloads shared by the HTTP benchmarks and their baselines. */

/** The 60-byte JSON value: stored in zest under the key `get` reads, and what the baseline answers. */
export const JSON_60 = '{"sensor":"bench/one","celsius":21.5,"ok":true,"seq":123456}';

/** The 100-byte text/plain body of `put`. */
export const TEXT_100 = `${"zest-bench ".repeat(9)}0`;

if (Buffer.byteLength(JSON_60) !== 60 || Buffer.byteLength(TEXT_100) !== 100)
  throw new Error("bench payload sizes are off");
