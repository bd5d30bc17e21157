/**
 * The naive reference model of the lite dialect's rules (docs/PATTERNS.md), written as plainly as possible and independently of
 * both engines (regular expressions for validity, arrays and recursion for matching). Property tests
 * compare each engine with it; it is slow on purpose and never used outside tests.
 */
export type Dialect = 'lite' | 'mqtt' | 'nats';

const RULES = {
  lite: { separator: '__', one: '*', rest: '**', restMin: 1 },
  mqtt: { separator: '/', one: '+', rest: '#', restMin: 0 },
  nats: { separator: '.', one: '*', rest: '>', restMin: 1 },
} as const;

/** Unpaired surrogates: with the `u` flag a regex sees a proper pair as one code point. */
const LONE_SURROGATE = /\p{Cs}/u;

function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

export function modelValidTopic(dialect: Dialect, topic: string): boolean {
  if (topic === '') return false;
  if (dialect === 'lite') return /^[A-Za-z0-9_-]+$/.test(topic);
  if (LONE_SURROGATE.test(topic) || topic.includes('\uFFFD') || topic.includes('\0')) return false;
  if (dialect === 'mqtt') return !/[+#]/.test(topic) && byteLength(topic) <= 65535;
  return !/[ \t\r\n]/.test(topic) && topic.split('.').every((t) => t !== '' && t !== '*' && t !== '>');
}

export function modelValidPattern(dialect: Dialect, pattern: string): boolean {
  if (pattern === '') return false;
  const { separator, one, rest } = RULES[dialect];
  const segments = pattern.split(separator);
  const restIsLastOnly = segments.every((s, i) => s !== rest || i === segments.length - 1);
  if (dialect === 'lite') {
    return (
      /^[A-Za-z0-9_*-]+$/.test(pattern) &&
      restIsLastOnly &&
      segments.every((s) => s !== '' && (!s.includes('*') || s === one || s === rest))
    );
  }
  if (LONE_SURROGATE.test(pattern) || pattern.includes('\uFFFD') || pattern.includes('\0')) return false;
  if (dialect === 'mqtt') {
    return (
      byteLength(pattern) <= 65535 &&
      restIsLastOnly &&
      segments.every((s) => (!s.includes('+') || s === one) && (!s.includes('#') || s === rest))
    );
  }
  return !/[ \t\r\n]/.test(pattern) && restIsLastOnly && segments.every((s) => s !== '');
}

export function modelMatches(dialect: Dialect, pattern: string, topic: string): boolean {
  if (!modelValidPattern(dialect, pattern) || !modelValidTopic(dialect, topic)) return false;
  const { separator, one, rest, restMin } = RULES[dialect];
  const p = pattern.split(separator);
  const t = topic.split(separator);
  if (dialect === 'mqtt' && topic.startsWith('$') && (p[0] === one || p[0] === rest)) return false;
  const walk = (i: number, j: number): boolean => {
    if (i === p.length) return j === t.length;
    if (p[i] === rest) return t.length - j >= restMin;
    if (j === t.length) return false;
    return (p[i] === one || p[i] === t[j]) && walk(i + 1, j + 1);
  };
  return walk(0, 0);
}

/** `expand` by definition: the candidates any pattern matches, first-seen order, no duplicates. */
export function modelExpand(dialect: Dialect, patterns: string[], candidates: string[]): string[] {
  const hit = candidates.filter((c) => patterns.some((p) => modelMatches(dialect, p, c)));
  return [...new Set(hit)];
}
