/**
 * `litetopic bench`: runs the benchmark suites of a source checkout (bench/run.ts through tsx, in a
 * child process so a suite's own subprocesses and memory figures are undisturbed). A full run writes
 * bench/results/<suite>.json, regenerates bench/RESULTS.md and one SVG chart per suite in
 * bench/charts/. The suites, their peers (qlobber, lmdb, better-sqlite3, ...) and tsx are
 * development files that the published package does not carry, so from an installed package the
 * command says so in one line and exits with EXIT.UNAVAILABLE.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { CommandError, EXIT, flag, type ParsedArgs } from './args.js';
import type { Output } from './output.js';
import { PACKAGE_ROOT } from './package.js';

export const BENCH_OPTIONS = {
  quick: { kind: 'flag' },
  seed: { kind: 'integer', min: 0, max: 0xffff_ffff },
  charts: { kind: 'flag' },
} as const;

export const BENCH_HELP = `usage: litetopic bench [suite...] [--quick] [--seed n]
       litetopic bench --charts

Runs the benchmark suites (by default every suite bench/run.ts registers: pattern, trie, log,
broker, ...) on the native and js engines beside the peers people use today, checks that all give
the same answers before timing, and prints tables. A full run writes bench/results/<suite>.json and regenerates bench/RESULTS.md and one
SVG bar chart per suite in bench/charts/ (engines and peers as bars). A peer that is not installed
is skipped with a note. Full runs take minutes per suite; --quick takes seconds and only prints.

Benchmarks run from a source checkout (git clone, npm ci, then npx litetopic bench or npm run
bench): the installed package does not carry bench/ or the peers (exit code 4 there).

options:
  --quick        a short pass that prints and writes nothing
  --seed n       passed to the suites as LITETOPIC_BENCH_SEED; each suite prints the seed it uses
                 (suites with a recorded fixed seed keep it, so figures stay comparable)
  --charts       only redraw bench/charts/*.svg from the current bench/RESULTS.md
  --verbose      stack traces on errors
  --help         this text

exit codes: 0 ok, 1 a suite failed, 2 usage error (unknown suite or option),
            4 not a source checkout (no bench/ sources or no tsx)`;

/** The source checkout's bench runner, or a one-line reason why there is none. */
function sourceCheckout(): { runner: string; charts: string } {
  const runner = join(PACKAGE_ROOT, 'bench', 'run.ts');
  const charts = join(PACKAGE_ROOT, 'bench', 'charts.ts');
  const tsx = join(PACKAGE_ROOT, 'node_modules', 'tsx', 'package.json');
  if (!existsSync(runner) || !existsSync(tsx)) {
    throw new CommandError(
      'benchmarks run from a source checkout (git clone the repository, npm ci, then npx litetopic bench); ' +
        `this installation at ${PACKAGE_ROOT} has no bench/ sources or no tsx`,
      EXIT.UNAVAILABLE,
    );
  }
  return { runner, charts };
}

/** Peers each suite compares against (besides tinybench, which times every suite). */
const SUITE_PEERS: Record<string, readonly string[]> = {
  pattern: ['qlobber', 'mqtt-match'],
  log: ['lmdb', 'better-sqlite3'],
};
const FALLBACK_SUITES = ['pattern', 'trie', 'log', 'broker'];

/** The suites bench/run.ts knows, read from its `SUITES` list so the two cannot drift apart. */
function knownSuites(runner: string): string[] {
  const match = /const SUITES = \[([^\]]*)\]/.exec(readFileSync(runner, 'utf8'));
  const names = match?.[1]?.match(/'[^']+'/g)?.map((q) => q.slice(1, -1));
  return names !== undefined && names.length > 0 ? names : FALLBACK_SUITES;
}

function missingPeers(suite: string): string[] {
  const require = createRequire(join(PACKAGE_ROOT, 'package.json'));
  return ['tinybench', ...(SUITE_PEERS[suite] ?? [])].filter((name) => {
    try {
      require.resolve(name);
      return false;
    } catch {
      return true;
    }
  });
}

function runScript(script: string, argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...argv], {
      cwd: PACKAGE_ROOT,
      env,
      stdio: 'inherit',
    });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on('SIGINT', forward);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      process.off('SIGINT', forward);
      resolve(code ?? (signal === 'SIGINT' ? 130 : EXIT.FAILURE));
    });
  });
}

export async function runBench(args: ParsedArgs, out: Output): Promise<number> {
  const { runner, charts } = sourceCheckout();
  if (flag(args, 'charts')) {
    if (args.positionals.length > 0 || flag(args, 'quick')) {
      throw new CommandError('--charts takes no suite and no --quick', EXIT.USAGE);
    }
    return runScript(charts, [], process.env);
  }
  const env = { ...process.env };
  const seed = args.options.get('seed');
  if (typeof seed === 'number') env.LITETOPIC_BENCH_SEED = String(seed);
  if (!existsSync(join(PACKAGE_ROOT, 'dist', 'index.js'))) {
    out.error('bench: dist/ is missing; building it first (npm run build:ts)');
    const built = await runScript(join(PACKAGE_ROOT, 'scripts', 'build-ts.mjs'), [], process.env);
    if (built !== 0) return EXIT.FAILURE;
  }
  const known = knownSuites(runner);
  const unknown = args.positionals.find((s) => !known.includes(s));
  if (unknown !== undefined)
    throw new CommandError(`unknown suite "${unknown}"; suites: ${known.join(', ')}`, EXIT.USAGE);
  const asked = args.positionals.length > 0 ? [...new Set(args.positionals)] : known;
  const suites = asked.filter((suite) => {
    const missing = missingPeers(suite);
    if (missing.length > 0)
      out.error(`bench: skipping ${suite}: ${missing.join(', ')} not installed (npm ci installs them)`);
    return missing.length === 0;
  });
  if (suites.length === 0) return EXIT.UNAVAILABLE;
  const code = await runScript(runner, [...suites, ...(flag(args, 'quick') ? ['--quick'] : [])], env);
  return code === EXIT.USAGE ? EXIT.USAGE : code === 0 ? EXIT.OK : EXIT.FAILURE;
}
