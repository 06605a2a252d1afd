/** See paced.mjs. */
export function paced(
  count: number,
  first: number,
  rate: number,
  send: (seq: number) => void | Promise<void>,
): Promise<number>;
