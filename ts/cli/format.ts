/**
 * Text output helpers for the command line and the benchmark suites: aligned tables, numbers with
 * thousands separators, durations and sizes. Plain ASCII padding so the output survives pipes and
 * log files.
 */

/** A table of text cells; `title` and `note` are printed above it when given. */
export interface TextTable {
  title?: string;
  note?: string;
  headers: readonly string[];
  rows: readonly (readonly string[])[];
}

/** A cell that stands for no figure: empty, or a dash for a figure that could not be measured. */
const BLANK_CELLS = new Set(['', '-', '—']);

/** A figure, optionally with a unit: `1,234`, `-0.5 ms`, `12%`, `3.2×`, `4.0 MiB`, `250/s`. */
const NUMERIC_CELL = /^[-+]?[\d,.]+\s*(%|×|ms|s|B|KiB|MiB|GiB|\/s)?$/;

/**
 * Whether a column is to be right-aligned: every cell that is not blank looks like a figure, and
 * there is at least one.
 */
export function isNumericColumn(cells: readonly string[]): boolean {
  const filled = cells.filter((cell) => !BLANK_CELLS.has(cell));
  return filled.length > 0 && filled.every((cell) => NUMERIC_CELL.test(cell));
}

/** Per column of `table`, whether it is right-aligned (see `isNumericColumn`). */
export function numericColumns(table: Pick<TextTable, 'headers' | 'rows'>): boolean[] {
  return table.headers.map((_, i) => isNumericColumn(table.rows.map((row) => row[i] ?? '')));
}

/** Renders a table with a header rule, columns padded to their widest cell, figures right-aligned. */
export function renderTable(table: TextTable): string {
  const { headers, rows } = table;
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = numericColumns(table);
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
  if (table.note !== undefined) out.push(table.note);
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
