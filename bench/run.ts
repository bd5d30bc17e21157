/**
 * Benchmark entry point: `tsx bench/run.ts [suite...] [--quick] [--recover-mib=N] [--out=DIR]`
 * (`npm run bench -- pattern`), or compiled, `node dist/bench/run.js ...` (what `litetopic bench` runs
 * from an installed package). With no suite named, every suite runs. `--recover-mib` sizes the log
 * suite's reopen-after-kill log (default 2,048 MiB, 64 with --quick). A full run stores its figures
 * in <out>/results/<suite>.json and regenerates <out>/RESULTS.md and <out>/charts/*.svg from them.
 * <out> is bench/ in a source checkout and ./litetopic-bench (under the current directory) when
 * compiled, unless --out names another; a quick run only prints unless --out is given.
 * `--render` runs nothing: it regenerates RESULTS.md and the charts from the stored results.
 */
import { join, resolve } from 'node:path';
import { COMPILED, PACKAGE_ROOT, takeSkippedPeers } from './lib.js';
import { environment, readRecords, type SuiteRecord, writeRecord } from './record.js';
import { writeResultsMarkdown } from './report.js';

const SUITES = ['pattern', 'trie', 'log', 'broker', 'lifecycle', 'key-shared', 'rocketmq'] as const;
type Suite = (typeof SUITES)[number];

interface Options {
  suites: Suite[];
  quick: boolean;
  /** Only regenerate RESULTS.md and the charts from the stored results. */
  render: boolean;
  recoverMib: number | undefined;
  /** Where results go; undefined for a quick run without --out, which writes nothing. */
  out: string | undefined;
}

/** Where a written run goes when --out is not given: never into an installed package's directory. */
const DEFAULT_OUT = COMPILED ? resolve('litetopic-bench') : resolve(PACKAGE_ROOT, 'bench');

/** Exit code for a usage error, as shells and most CLIs use it. */
const USAGE_EXIT = 2;

function parse(argv: readonly string[]): Options | string {
  const suites: Suite[] = [];
  let quick = false;
  let render = false;
  let recoverMib: number | undefined;
  let out: string | undefined;
  for (const arg of argv) {
    if (arg === '--quick') quick = true;
    else if (arg === '--render') render = true;
    else if (arg.startsWith('--out=') && arg.length > '--out='.length) out = resolve(arg.slice('--out='.length));
    else if (arg.startsWith('--recover-mib=')) {
      recoverMib = Number(arg.slice('--recover-mib='.length));
      if (!Number.isSafeInteger(recoverMib) || recoverMib < 1)
        return `--recover-mib takes a whole number of MiB (got "${arg}")`;
    } else if ((SUITES as readonly string[]).includes(arg)) suites.push(arg as Suite);
    else if (arg.startsWith('-'))
      return `unknown option "${arg}"; options: --quick, --render, --recover-mib=N, --out=DIR`;
    else return `unknown suite "${arg}"; known suites: ${SUITES.join(', ')}`;
  }
  if (render && (quick || suites.length > 0)) return '--render takes no suite and no --quick';
  return {
    suites: suites.length > 0 ? [...new Set(suites)] : [...SUITES],
    quick,
    render,
    recoverMib,
    out: out ?? (quick ? undefined : DEFAULT_OUT),
  };
}

function printEnvironment(): void {
  const env = environment();
  console.log(`engine: ${JSON.stringify(env.engine)}`);
  console.log(`node ${env.node} on ${env.platform}; litetopic ${env.packageVersion}`);
  console.log(`cpu: ${env.cpu} × ${env.cores}, memory ${(env.memoryBytes / 2 ** 30).toFixed(1)} GiB`);
}

/** The command that reproduces a suite's figures, as the record names it. */
function reproduce(suite: Suite, options: Options): string {
  const seed = process.env.LITETOPIC_BENCH_SEED;
  const recover = suite === 'log' && options.recoverMib !== undefined ? ` --recover-mib=${options.recoverMib}` : '';
  const quick = options.quick ? ' --quick' : '';
  if (COMPILED) return `npx litetopic bench ${suite}${quick}${seed ? ` --seed ${seed}` : ''}`;
  // RocketMQ is measured against the test cluster, which this script starts.
  if (suite === 'rocketmq') return `npm run bench:rocketmq${quick === '' ? '' : ` --${quick}`}`;
  return `${seed ? `LITETOPIC_BENCH_SEED=${seed} ` : ''}npm run bench -- ${suite}${quick}${recover}`;
}

/** Runs one suite; its module is loaded only then, so a run loads the code of the suites it runs. */
async function result(suite: Suite, options: Options): Promise<SuiteRecord> {
  const { quick, recoverMib } = options;
  const record = { command: reproduce(suite, options), environment: environment() };
  if (suite === 'pattern') {
    const { runPatternBench } = await import('./pattern.js');
    return { suite, ...record, result: await runPatternBench({ quick }) };
  }
  if (suite === 'log') {
    const { runLogBench } = await import('./log.js');
    return { suite, ...record, result: await runLogBench({ quick, recoverMib }) };
  }
  if (suite === 'broker') {
    const { runBrokerBench } = await import('./broker.js');
    return { suite, ...record, result: await runBrokerBench({ quick }) };
  }
  if (suite === 'lifecycle') {
    const { runLifecycleBench } = await import('./lifecycle.js');
    return { suite, ...record, result: await runLifecycleBench({ quick }) };
  }
  if (suite === 'key-shared') {
    const { runKeySharedBench } = await import('./key-shared.js');
    return { suite, ...record, result: await runKeySharedBench({ quick }) };
  }
  if (suite === 'rocketmq') {
    const { runRocketmqBench } = await import('./rocketmq.js');
    return { suite, ...record, result: await runRocketmqBench({ quick }) };
  }
  const { runTrieBench } = await import('./trie.js');
  return { suite, ...record, result: await runTrieBench({ quick }) };
}

async function runSuite(suite: Suite, options: Options): Promise<void> {
  takeSkippedPeers();
  const record = await result(suite, options);
  const skippedPeers = takeSkippedPeers();
  if (skippedPeers.length > 0) record.skippedPeers = skippedPeers;
  if (options.out === undefined) return;
  console.log(`\nwrote ${writeRecord(record, options.out)}`);
}

/** Regenerates <out>/RESULTS.md and its charts from <out>/results/*.json, running nothing. */
function render(out: string): number {
  const records = readRecords(SUITES, out);
  if (records.length === 0) {
    console.error(`bench: there are no results in ${join(out, 'results')} to render; run a suite first`);
    return 1;
  }
  console.log(`wrote ${writeResultsMarkdown(records, out)} and its charts from ${records.length} stored results`);
  return 0;
}

async function main(): Promise<number> {
  const options = parse(process.argv.slice(2));
  if (typeof options === 'string') {
    console.error(
      `bench: ${options}\nusage: tsx bench/run.ts [${SUITES.join('|')}...] [--quick] [--recover-mib=N] [--out=DIR]\n` +
        '       tsx bench/run.ts --render [--out=DIR]',
    );
    return USAGE_EXIT;
  }
  if (options.render) return render(options.out ?? DEFAULT_OUT);
  const started = performance.now();
  printEnvironment();
  for (const suite of options.suites) await runSuite(suite, options);
  if (options.out !== undefined) {
    console.log(`wrote ${writeResultsMarkdown(readRecords(SUITES, options.out), options.out)} and its charts`);
  }
  console.log(`\nbenchmarks took ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
