/**
 * How the suites write their figures: one `Table` per section, the same headers and cells for the
 * console (the command line's renderer, ts/cli/format.ts) and for RESULTS.md (bench/report.ts), so
 * the two never disagree; and the cell formats the suites share.
 */
import { format } from './lib.js';

const { renderTable } = format;

/** A section's figures: a title, an optional note on how they were taken, and text cells. */
export interface Table {
  title: string;
  note?: string;
  headers: string[];
  rows: string[][];
}

/** Formats a figure for a table: whole from 100 up, else one or two decimals; thousands separated. */
export function figure(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/** A figure, or `—` for one that could not be measured. */
export function cell(value: number, format: (v: number) => string = figure): string {
  return Number.isFinite(value) ? format(value) : '—';
}

/** A ratio: `1.25×`. */
export const times = (value: number): string => `${figure(value)}×`;

/** Bytes as MiB, or `—` when unknown. */
export function mebibytes(bytes: number | null): string {
  return bytes === null || !Number.isFinite(bytes) ? '—' : `${figure(bytes / 2 ** 20)} MiB`;
}

/** The note cell of a case that failed: the first line of its error, cut to `width`. */
export function failure(error: string | undefined, width = 120): string {
  return error === undefined ? '' : `failed: ${error.split('\n')[0]?.slice(0, width)}`;
}

/** Prints tables to the console, each under a `## title` heading with its note. */
export function printTables(tables: readonly Table[]): void {
  for (const table of tables) {
    console.log(`\n## ${table.title}`);
    if (table.note) console.log(table.note);
    console.log(renderTable({ headers: table.headers, rows: table.rows }));
  }
}
