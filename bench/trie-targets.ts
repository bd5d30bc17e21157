/**
 * The trie suite's targets, from one run's figures: on a trie that changes, the first `expand`
 * after adding the names is quick, an expand after a round of changes costs no more than a few
 * times the same expand on an unchanged trie, native is not slower than js on any expand, and no
 * single call holds the event loop longer than its answer explains: no add or remove (no answer),
 * no expand of a session, agent or tenant (small answers from kept lists) over `CHANGE_MS`, and no
 * wide walk (a walk down most of the trie, which may carry a compaction step) over a few times its
 * median.
 */
import type { Target } from './targets.js';
import { ceilingTarget, notMeasured, ratioTarget } from './targets.js';
import type { ChurnResult, TrieBenchResult } from './trie-result.js';

/** The first `expand` after the names were added, ms. */
const FIRST_EXPAND_MS = { native: 50, js: 100 } as const;
/** An expand after a round of changes within this many times the same expand unchanged. */
const CHANGED_FACTOR = 3;
/** The longest single add or remove, ms: it returns no answer whose size could explain a delay. */
const CHANGE_MS = 10;
/** The longest wide walk of the churn rounds within this many times its median. */
const WIDE_FACTOR = 3;
const ENGINES = ['native', 'js'] as const;

function churnTargets(churn: ChurnResult | undefined, names: number): Target[] {
  const size = `${(churn?.names ?? names) / 1e6}M`;
  const first = ENGINES.map((engine) => {
    const name = `churn: first expand after adding ${size} names, ${engine}`;
    const times = churn?.first.filter((f) => f.engine === engine).map((f) => f.ms) ?? [];
    return times.length === 0
      ? notMeasured(name, `≤ ${FIRST_EXPAND_MS[engine]} ms`)
      : ceilingTarget(name, Math.max(...times), FIRST_EXPAND_MS[engine], 'ms', { inclusive: true });
  });
  if (churn === undefined) {
    return [
      ...first,
      notMeasured('churn: every expand after a round of changes, changed ÷ unchanged', `≤ ${CHANGED_FACTOR}×`),
      notMeasured('churn: native ÷ js on every expand', '≤ 1×'),
      notMeasured('churn: longest single add or remove', `≤ ${CHANGE_MS} ms`),
    ];
  }
  const rows = churn.rows.flatMap((row) => [
    ...(
      [
        ['native', row.nativeWorstChangedRatio],
        ['js', row.jsWorstChangedRatio],
      ] as const
    ).map(([engine, worst]) =>
      ceilingTarget(
        `churn ${row.kind} ${row.pattern}, ${engine}: worst changed ÷ unchanged`,
        worst,
        CHANGED_FACTOR,
        '×',
        { inclusive: true },
      ),
    ),
    // Native over js paired by round, median of the rounds; "not slower" is a ratio of at most 1.
    ceilingTarget(`churn ${row.kind}, changed: native ÷ js`, row.nativeOverJsChanged, 1, '×', { inclusive: true }),
    ceilingTarget(`churn ${row.kind}, unchanged: native ÷ js`, row.nativeOverJsUnchanged, 1, '×', { inclusive: true }),
    ...(row.nativeOverJsRepeated === undefined
      ? []
      : [
          ceilingTarget(`churn ${row.kind}, repeated: native ÷ js`, row.nativeOverJsRepeated, 1, '×', {
            inclusive: true,
          }),
        ]),
  ]);
  const changes = ENGINES.map((engine) =>
    ceilingTarget(
      `churn: longest single add or remove, ${engine}`,
      churn.worstChangeUs[engine] / 1000,
      CHANGE_MS,
      'ms',
      {
        inclusive: true,
      },
    ),
  );
  return [...first, ...rows, ...longestTargets(churn), ...changes];
}

/** The longest expands of the rounds; none for a run recorded before the rounds had a wide walk. */
function longestTargets(churn: ChurnResult): Target[] {
  const { wide, longestExpand } = churn;
  if (wide === undefined || longestExpand === undefined) return [];
  return [
    ...ENGINES.map((engine) =>
      ceilingTarget(
        `churn: longest single expand of a session, agent or tenant, ${engine}`,
        longestExpand[engine].narrow.us / 1000,
        CHANGE_MS,
        'ms',
        { inclusive: true },
      ),
    ),
    ...ENGINES.map((engine) =>
      ceilingTarget(
        `churn ${wide.pattern}, ${engine}: longest ÷ median`,
        engine === 'native' ? wide.nativeWorstUs / wide.nativeMedianUs : wide.jsWorstUs / wide.jsMedianUs,
        WIDE_FACTOR,
        '×',
        { inclusive: true },
      ),
    ),
    ceilingTarget(`churn ${wide.pattern}: native ÷ js (medians)`, wide.nativeMedianUs / wide.jsMedianUs, 1, '×', {
      inclusive: true,
    }),
  ];
}

/** The suite's targets, from the figures of one run. */
export function checkTrieTargets(result: Omit<TrieBenchResult, 'targets'>): Target[] {
  // Paired by round; records made before the pair was kept compare the medians of the same rounds.
  const staticExpands = result.expand.map((row) =>
    ratioTarget(
      `expand ${row.pattern}, unchanged trie: js / native time`,
      row.nativeOverJsSpeedup ?? row.jsNs / row.nativeNs,
      1,
    ),
  );
  return [...churnTargets(result.churn, result.config.names), ...staticExpands];
}
