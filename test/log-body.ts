/** The body a writer gives message `n` of `lmq`: a reader can check it knowing only the two. */
export function bodyFor(lmq: string, n: number, bytes = 40): Buffer {
  const seed = `${lmq}#${n}|`;
  return Buffer.from(seed.repeat(Math.ceil(bytes / seed.length)).slice(0, bytes));
}
