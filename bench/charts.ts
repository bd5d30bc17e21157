/**
 * One SVG bar chart per benchmark suite, drawn from the tables its stored record renders to (the
 * same tables RESULTS.md shows): no dependency, no browser, and no coupling to each suite's result
 * types (a new suite gets a chart as soon as it has a table of implementations with a rate or a
 * time column).
 *
 * For each suite the first table is chosen that has a column naming what was measured
 * (implementation, store, engine, client or case) and a rate column (`…/s`, higher is better) or,
 * failing that, a median time column (lower is better). Rows become bars, grouped by the text
 * column before the bar column when there is one (subscriptions, body size, shape). Values spanning
 * more than two decades are drawn on a log scale, which the subtitle says.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Table } from './table.js';

interface Bar {
  name: string;
  value: number;
}

export interface Chart {
  title: string;
  subtitle: string;
  unit: string;
  higherIsBetter: boolean;
  groups: { label: string; bars: Bar[] }[];
}

const BAR_COLUMNS = ['implementation', 'store', 'engine', 'client', 'case'];

function numberOf(cell: string | undefined): number {
  const match = /^[\d,]*\.?\d+/.exec((cell ?? '').replace(/\s/g, ''));
  return match === null ? Number.NaN : Number(match[0].replace(/,/g, ''));
}

/**
 * The column that splits the bars into groups: the first column before the bar column, or the one
 * right after it when that is a parameter rather than a measurement, whose value changes between rows.
 */
function groupColumn(table: Table, bar: number, value: number): number {
  const candidates = [...Array(bar).keys()];
  const next = table.headers[bar + 1];
  if (next !== undefined && bar + 1 !== value && !/\/s|ms|µs|ns|%|×|Δ/.test(next)) candidates.push(bar + 1);
  for (const column of candidates) {
    const values = new Set(table.rows.map((r) => r[column]));
    if (values.size > 1) return column;
  }
  return -1;
}

/** The chart a suite's tables support, or undefined when none has a bar and a value column. */
export function chartOf(section: string, tables: readonly Table[]): Chart | undefined {
  const pick = (test: (h: string) => boolean) => {
    for (const table of tables) {
      const bar = table.headers.findIndex((h) => BAR_COLUMNS.includes(h.toLowerCase()));
      const value = table.headers.findIndex(test);
      if (bar >= 0 && value >= 0 && table.rows.some((r) => Number.isFinite(numberOf(r[value])))) {
        return { table, bar, value };
      }
    }
    return undefined;
  };
  const rate = pick((h) => /\/s\b/.test(h) && !/MB\/s/.test(h));
  const time = rate ?? pick((h) => /median|ms\b|µs\b|ns\b/.test(h));
  if (time === undefined) return undefined;
  const { table, bar, value } = time;
  const group = groupColumn(table, bar, value);
  const groups: Chart['groups'] = [];
  for (const row of table.rows) {
    const v = numberOf(row[value]);
    if (!Number.isFinite(v)) continue;
    const label = group >= 0 ? `${table.headers[group]} ${row[group]}` : '';
    let target = groups[groups.length - 1];
    if (target === undefined || target.label !== label) {
      target = { label, bars: [] };
      groups.push(target);
    }
    target.bars.push({ name: row[bar] ?? '', value: v });
  }
  const unit = table.headers[value] ?? '';
  const higherIsBetter = rate !== undefined;
  return {
    title: `${section}: ${table.title}`,
    subtitle: `${unit}, ${higherIsBetter ? 'higher' : 'lower'} is better`,
    unit,
    higherIsBetter,
    groups,
  };
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function colorOf(name: string, palette: Map<string, string>): string {
  const known = /native/i.test(name) ? '#d9622b' : /\bjs\b|litetopic js/i.test(name) ? '#2b7bd9' : undefined;
  if (known !== undefined) return known;
  const peers = ['#6b7280', '#9ca3af', '#8b5cf6', '#14b8a6', '#a16207', '#be185d'];
  let color = palette.get(name);
  if (color === undefined) {
    color = peers[palette.size % peers.length] as string;
    palette.set(name, color);
  }
  return color;
}

function formatValue(value: number): string {
  if (value >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toPrecision(3);
}

/** Renders a horizontal bar chart as a standalone SVG document. */
export function renderSvg(chart: Chart): string {
  const width = 860;
  const labelWidth = 300;
  const valueWidth = 110;
  const barArea = width - labelWidth - valueWidth - 20;
  const rowHeight = 20;
  const values = chart.groups.flatMap((g) => g.bars.map((b) => b.value)).filter((v) => v > 0);
  const max = Math.max(...values, 1);
  const min = Math.min(...values, max);
  const log = max / min > 100;
  const scale = (v: number) =>
    v <= 0 ? 0 : log ? (Math.log10(v / min) + 0.3) / (Math.log10(max / min) + 0.3) : v / max;
  const palette = new Map<string, string>();
  const parts: string[] = [];
  let y = 58;
  for (const group of chart.groups) {
    if (group.label !== '') {
      parts.push(`<text x="10" y="${y + 12}" class="group">${escapeXml(group.label)}</text>`);
      y += rowHeight;
    }
    for (const bar of group.bars) {
      const w = Math.max(1, scale(bar.value) * barArea);
      parts.push(
        `<text x="${labelWidth - 8}" y="${y + 13}" text-anchor="end">${escapeXml(bar.name)}</text>`,
        `<rect x="${labelWidth}" y="${y + 2}" width="${w.toFixed(1)}" height="${rowHeight - 5}" fill="${colorOf(bar.name, palette)}"/>`,
        `<text x="${(labelWidth + w + 6).toFixed(1)}" y="${y + 13}">${formatValue(bar.value)}</text>`,
      );
      y += rowHeight;
    }
    y += 8;
  }
  const height = y + 10;
  const subtitle = `${chart.subtitle}${log ? '; log scale' : ''}`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    // The accessible name of the picture (readers and the a11y lint rely on it).
    `<title>${escapeXml(chart.title)}</title>`,
    '<style>text{fill:#1f2937}.title{font-size:15px;font-weight:600}.sub{fill:#4b5563}.group{font-weight:600}</style>',
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="10" y="22" class="title">${escapeXml(chart.title)}</text>`,
    `<text x="10" y="40" class="sub">${escapeXml(subtitle)}</text>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/** Writes <dir>/<section>.svg for every section that has a table to chart; returns the files. */
export function writeCharts(sections: readonly { heading: string; tables: readonly Table[] }[], dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const { heading, tables } of sections) {
    const chart = chartOf(heading, tables);
    if (chart === undefined) {
      console.log(`charts: no table to chart in "${heading}"`);
      continue;
    }
    const file = join(dir, `${slug(heading)}.svg`);
    writeFileSync(file, renderSvg(chart));
    written.push(file);
  }
  return written;
}
