/**
 * Text output helpers for the command line: aligned tables, numbers with thousands separators,
 * durations and percentiles. Plain ASCII padding so the output survives pipes and log files.
 */

export interface TextTable {
  title?: string;
  headers: readonly string[];
  rows: readonly (readonly string[])[];
}

/** A cell is right-aligned when every non-empty value in its column looks like a number. */
function numericColumn(rows: readonly (readonly string[])[], column: number): boolean {
  let seen = false;
  for (const row of rows) {
    const cell = row[column] ?? '';
    if (cell === '' || cell === '-') continue;
    if (!/^[-+]?[\d,.]+\s*(%|×|ms|s|B|KiB|MiB|GiB|\/s)?$/.test(cell)) return false;
    seen = true;
  }
  return seen;
}

/** Renders a table with a header rule, columns padded to their widest cell. */
export function renderTable(table: TextTable): string {
  const { headers, rows } = table;
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = headers.map((_, i) => numericColumn(rows, i));
  const line = (cells: readonly string[]) =>
    widths
      .map((w, i) => {
        const cell = cells[i] ?? '';
        return numeric[i] ? cell.padStart(w) : cell.padEnd(w);
      })
      .join('  ')
      .trimEnd();
  const out: string[] = [];
  if (table.title !== undefined) out.push(table.title);
  out.push(line(headers), widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) out.push(line(row));
  if (rows.length === 0) out.push('(none)');
  return out.join('\n');
}

/** 1234567 → "1,234,567"; fractions keep up to `digits` decimals. */
export function formatCount(value: number, digits = 0): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** Milliseconds with a precision that suits their size: 0.042 ms, 3.1 ms, 250 ms. */
export function formatMs(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return '-';
  if (value < 1) return `${value.toFixed(3)} ms`;
  if (value < 10) return `${value.toFixed(2)} ms`;
  if (value < 100) return `${value.toFixed(1)} ms`;
  return `${formatCount(Math.round(value))} ms`;
}

/** Bytes as B, KiB, MiB or GiB. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

/** An epoch-milliseconds timestamp as ISO 8601, or "-". */
export function formatTimestamp(ms: number | undefined): string {
  return ms === undefined || !Number.isFinite(ms) || ms <= 0 ? '-' : new Date(ms).toISOString();
}

/** The `q` quantile (0..1) of `samples` by nearest rank; sorts a copy. Undefined when empty. */
export function quantile(samples: ArrayLike<number>, q: number): number | undefined {
  if (samples.length === 0) return undefined;
  const sorted = Float64Array.from(samples).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

/**
 * A bounded uniform sample of a stream (reservoir sampling, Vitter's algorithm R), so percentiles
 * of millions of latencies cost a fixed amount of memory. The random source is injected so runs can
 * be repeated.
 */
export class Reservoir {
  private readonly values: Float64Array;
  private seen = 0;

  constructor(
    readonly capacity: number,
    private readonly random: () => number,
  ) {
    this.values = new Float64Array(capacity);
  }

  add(value: number): void {
    if (this.seen < this.capacity) this.values[this.seen] = value;
    else {
      const slot = Math.floor(this.random() * (this.seen + 1));
      if (slot < this.capacity) this.values[slot] = value;
    }
    this.seen++;
  }

  get count(): number {
    return this.seen;
  }

  samples(): Float64Array {
    return this.values.subarray(0, Math.min(this.seen, this.capacity));
  }
}

/** A small seeded PRNG (mulberry32): the demo's workload is the same on every run and engine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
