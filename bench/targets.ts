/**
 * A suite's targets, checked against the figures of one run: each target states its bar, the figure
 * measured and whether the figure reaches the bar. The suites compute them from their results
 * (<suite>-targets.ts), both when a run ends and when RESULTS.md is rendered again from the stored
 * results, so the page always states the targets of the code that renders it.
 */
import { figure, type Table, times } from './table.js';

export interface Target {
  name: string;
  /** The measured figure over the bar, oriented so that a larger ratio is better. */
  ratio: number;
  /** The ratio the bar asks for; `strict` means the ratio must exceed it. */
  target: number;
  strict: boolean;
  /** null when the figures cannot decide: the case failed, was not measured, or its delta is noise. */
  pass: boolean | null;
  /** The figure and the bar as text, for the table. */
  measured: string;
  required: string;
  /** An expectation stated without a number: reported, not counted as a target. */
  expectation?: boolean;
}

const attached = (unit: string) => unit === '×' || unit === '%';

/** A measured figure with its unit: `2.00 ms`, `1.25×`, `40.0%`. */
function withUnit(value: number, unit: string): string {
  return attached(unit) ? `${figure(value)}${unit}` : `${figure(value)} ${unit}`;
}

/**
 * A bar as the target states it: a bar set as a round number as written (`≥ 1.5×`, `< 2 ms`,
 * `≤ 5,000 ms`), one computed from the run's figures as a figure (`≤ 2,344 ms`).
 */
export function bar(comparison: '≥' | '>' | '≤' | '<', value: number, unit: string): string {
  const round = Math.abs(value * 100 - Math.round(value * 100)) < 1e-9;
  const number = round ? value.toLocaleString('en-US') : figure(value);
  return `${comparison} ${number}${attached(unit) ? '' : ' '}${unit}`;
}

/** A target on a ratio of this run's figures (speedups, shares of a floor): `≥ 5×`, or `> 1×` when strict. */
export function ratioTarget(name: string, ratio: number, target: number, strict = false): Target {
  const known = Number.isFinite(ratio);
  return {
    name,
    ratio,
    target,
    strict,
    pass: known ? (strict ? ratio > target : ratio >= target) : null,
    measured: known ? times(ratio) : '—',
    required: bar(strict ? '>' : '≥', target, '×'),
  };
}

/** A target on a figure that must stay below a bar (`< 2 ms`, or `≤` when `inclusive`). */
export function ceilingTarget(
  name: string,
  value: number,
  limit: number,
  unit: string,
  options: { inclusive?: boolean; measured?: string; undecided?: boolean } = {},
): Target {
  const known = Number.isFinite(value) && options.undecided !== true;
  const inclusive = options.inclusive === true;
  return {
    name,
    ratio: limit / value,
    target: 1,
    strict: !inclusive,
    pass: known ? (inclusive ? value <= limit : value < limit) : null,
    measured: known ? (options.measured ?? withUnit(value, unit)) : '—',
    required: bar(inclusive ? '≤' : '<', limit, unit),
  };
}

/** A target on a figure that must reach a bar (`≥ 3.5×`). */
export function floorTarget(name: string, value: number, floor: number, unit: string, measured?: string): Target {
  const known = Number.isFinite(value);
  return {
    name,
    ratio: value / floor,
    target: 1,
    strict: false,
    pass: known ? value >= floor : null,
    measured: known ? (measured ?? withUnit(value, unit)) : '—',
    required: bar('≥', floor, unit),
  };
}

/** A target this record has no figure for (a section added after it was recorded, a skipped peer). */
export function notMeasured(name: string, required: string): Target {
  return { name, ratio: Number.NaN, target: 1, strict: false, pass: null, measured: '—', required };
}

function result(t: Target): string {
  if (t.pass === null) return 'n/a';
  if (t.expectation) return t.pass ? 'as expected' : 'not as expected';
  return t.pass ? 'PASS' : 'MISS';
}

/** The targets table every suite prints: target, figure, bar and result. */
export function targetsTable(targets: readonly Target[], note?: string): Table {
  return {
    title: 'Targets',
    ...(note === undefined ? {} : { note }),
    headers: ['target', 'measured', 'required', 'result'],
    rows: targets.map((t) => [t.name, t.measured, t.required, result(t)]),
  };
}

/**
 * One sentence on the targets: all met, or which were missed and which could not be decided; empty
 * for a suite without targets.
 */
export function verdict(targets: readonly Target[], name: (t: Target) => string = (t) => t.name): string {
  const counted = targets.filter((t) => !t.expectation);
  if (counted.length === 0) return '';
  const missed = counted.filter((t) => t.pass === false).map(name);
  const undecided = counted.filter((t) => t.pass === null).map(name);
  return [
    missed.length === 0 ? 'Every measured target is met.' : `Missed: ${missed.join('; ')}.`,
    ...(undecided.length === 0 ? [] : [`Not decided (not measured, failed, or below noise): ${undecided.join('; ')}.`]),
  ].join(' ');
}
