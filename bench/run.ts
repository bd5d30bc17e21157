/**
 * Benchmark entry point: `tsx bench/run.ts [suite...] [--quick] [--recover-mib=N]` (`npm run bench -- pattern`).
 * With no suite named, every suite runs. `--recover-mib` sizes the log suite's reopen-after-kill log
 * (default 2,048 MiB, 64 with --quick). A full run (without --quick) stores its figures in
 * bench/results/<suite>.json and regenerates bench/RESULTS.md from them; a quick run only prints.
 */
import { runBrokerBench } from './broker.js';
import { runKeySharedBench } from './keyshared.js';
import { runLifecycleBench } from './lifecycle.js';
import { runLogBench } from './log.js';
import { runPatternBench } from './pattern.js';
import { environment, readRecords, type SuiteRecord, writeRecord, writeResultsMarkdown } from './report.js';
import { runTrieBench } from './trie.js';

const SUITES = ['pattern', 'trie', 'log', 'broker', 'lifecycle', 'keyshared'] as const;
type Suite = (typeof SUITES)[number];

interface Options {
  suites: Suite[];
  quick: boolean;
  recoverMib: number | undefined;
}

/** Exit code for a usage error, as shells and most CLIs use it. */
const USAGE_EXIT = 2;

function parse(argv: readonly string[]): Options | string {
  const suites: Suite[] = [];
  let quick = false;
  let recoverMib: number | undefined;
  for (const arg of argv) {
    if (arg === '--quick') quick = true;
    else if (arg.startsWith('--recover-mib=')) {
      recoverMib = Number(arg.slice('--recover-mib='.length));
      if (!Number.isSafeInteger(recoverMib) || recoverMib < 1)
        return `--recover-mib takes a whole number of MiB (got "${arg}")`;
    } else if ((SUITES as readonly string[]).includes(arg)) suites.push(arg as Suite);
    else if (arg.startsWith('-')) return `unknown option "${arg}"; options: --quick, --recover-mib=N`;
    else return `unknown suite "${arg}"; known suites: ${SUITES.join(', ')}`;
  }
  return { suites: suites.length > 0 ? [...new Set(suites)] : [...SUITES], quick, recoverMib };
}

function printEnvironment(): void {
  const env = environment();
  console.log(`engine: ${JSON.stringify(env.engine)}`);
  console.log(`node ${env.node} on ${env.platform}; litetopic ${env.packageVersion}`);
  console.log(`cpu: ${env.cpu} × ${env.cores}, memory ${(env.memoryBytes / 2 ** 30).toFixed(1)} GiB`);
}

async function runSuite(suite: Suite, options: Options): Promise<void> {
  const { quick, recoverMib } = options;
  const command = `npm run bench -- ${suite}${suite === 'log' && recoverMib !== undefined ? ` --recover-mib=${recoverMib}` : ''}`;
  let record: SuiteRecord;
  if (suite === 'pattern') {
    record = { suite, command, environment: environment(), result: await runPatternBench({ quick }) };
  } else if (suite === 'log') {
    record = { suite, command, environment: environment(), result: await runLogBench({ quick, recoverMib }) };
  } else if (suite === 'broker') {
    record = { suite, command, environment: environment(), result: await runBrokerBench({ quick }) };
  } else if (suite === 'lifecycle') {
    record = { suite, command, environment: environment(), result: await runLifecycleBench({ quick }) };
  } else if (suite === 'keyshared') {
    record = { suite, command, environment: environment(), result: await runKeySharedBench({ quick }) };
  } else {
    record = { suite, command, environment: environment(), result: await runTrieBench({ quick }) };
  }
  if (quick) return;
  console.log(`\nwrote ${writeRecord(record)}`);
}

async function main(): Promise<number> {
  const options = parse(process.argv.slice(2));
  if (typeof options === 'string') {
    console.error(`bench: ${options}\nusage: tsx bench/run.ts [${SUITES.join('|')}...] [--quick] [--recover-mib=N]`);
    return USAGE_EXIT;
  }
  const started = performance.now();
  printEnvironment();
  for (const suite of options.suites) await runSuite(suite, options);
  if (!options.quick) {
    console.log(`wrote ${writeResultsMarkdown(readRecords(SUITES))}`);
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
