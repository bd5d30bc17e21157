/**
 * `litetopic bench`: runs the benchmark suites in a child process (so a suite's own subprocesses and
 * memory figures are undisturbed), from one of two places holding the same code:
 *
 * - a source checkout: bench/run.ts through tsx (what `npm run bench` runs); results go to bench/;
 * - an installed package: the compiled suites in dist/bench/ (built from bench/*.ts by
 *   scripts/build-ts.mjs); results go to ./litetopic-bench under the current directory, since the
 *   package directory is not the user's to write.
 *
 * A written run stores <out>/results/<suite>.json and regenerates <out>/RESULTS.md and one SVG chart
 * per suite in <out>/charts/ from those files; `--render` regenerates them without running a suite.
 * Peers (qlobber, mqtt-match, lmdb, better-sqlite3) are devDependencies: a suite leaves out a peer
 * it cannot load, with a note, in its tables and its record.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CommandError, EXIT, flag, type ParsedArgs, text } from './args.js';
import type { Output } from './output.js';
import { PACKAGE_ROOT } from './package.js';

export const BENCH_OPTIONS = {
  quick: { kind: 'flag' },
  seed: { kind: 'integer', min: 0, max: 0xffff_ffff },
  out: { kind: 'string' },
  render: { kind: 'flag' },
} as const;

export const BENCH_HELP = `usage: litetopic bench [suite...] [--quick] [--seed n] [--out dir]
       litetopic bench --render [--out dir]

Runs the benchmark suites (by default all: pattern, trie, log, broker, lifecycle, key-shared, rocketmq) on the
native and js engines beside the peers people use today (qlobber, mqtt-match, lmdb, better-sqlite3),
checks that all give the same answers before timing, and prints tables. A full run writes
<out>/results/<suite>.json and regenerates <out>/RESULTS.md and one SVG bar chart per suite in
<out>/charts/ (engines and peers as bars) from the results of every suite stored there. Full runs
take minutes per suite; --quick takes seconds.

Where results go (<out>): bench/ in a source checkout (git clone, npm ci; also npm run bench);
./litetopic-bench under the current directory when run from an installed package (npx litetopic
bench), which runs the compiled suites it ships and never writes into its own directory.

Peers are development dependencies: one that is not installed (as in a project that only installed
litetopic) is skipped with a note ("peer qlobber not installed: skipped"), and its rows and the
targets measured against it are left out of the tables, the JSON and RESULTS.md.

options:
  --quick        a short pass with small workloads; prints, and writes only when --out is given
  --seed n       passed to the suites as LITETOPIC_BENCH_SEED; each suite prints the seed it uses
                 (suites with a recorded fixed seed keep it, so figures stay comparable)
  --out dir      write results/, RESULTS.md and charts/ under dir instead (created if missing)
  --render       run nothing: regenerate <out>/RESULTS.md and <out>/charts/*.svg from the results
                 stored in <out>/results/*.json
  --verbose      stack traces on errors
  --help         this text

exit codes: 0 ok, 1 a suite failed, 2 usage error (unknown suite or option),
            4 this installation has no benchmark suites (neither bench/ with tsx nor dist/bench/)`;

/** Where the suites are run from, and how. */
interface Suites {
  /** The entry point: bench/run.ts or dist/bench/run.js. */
  runner: string;
  /** Node options that let node run the entry point (tsx for the .ts sources). */
  nodeArgs: string[];
  /** The child's working directory. */
  cwd: string;
  /** Where a written run goes without --out. */
  defaultOut: string;
  source: boolean;
}

/** The source checkout's bench/ through tsx, else the compiled suites, else a one-line reason. */
function locateSuites(): Suites {
  const source = join(PACKAGE_ROOT, 'bench');
  if (existsSync(join(source, 'run.ts')) && existsSync(join(PACKAGE_ROOT, 'node_modules', 'tsx', 'package.json'))) {
    return {
      runner: join(source, 'run.ts'),
      nodeArgs: ['--import', 'tsx'],
      cwd: PACKAGE_ROOT,
      defaultOut: source,
      source: true,
    };
  }
  const compiled = join(PACKAGE_ROOT, 'dist', 'bench');
  if (existsSync(join(compiled, 'run.js'))) {
    return {
      runner: join(compiled, 'run.js'),
      nodeArgs: [],
      cwd: process.cwd(),
      defaultOut: resolve('litetopic-bench'),
      source: false,
    };
  }
  throw new CommandError(
    `this installation at ${PACKAGE_ROOT} has no benchmark suites: neither bench/run.ts with tsx nor ` +
      'dist/bench/run.js (in a source checkout, npm ci then npm run build)',
    EXIT.UNAVAILABLE,
  );
}

const FALLBACK_SUITES = ['pattern', 'trie', 'log', 'broker', 'lifecycle', 'key-shared', 'rocketmq'];

/** The suites the runner knows, read from its `SUITES` list (in .ts and compiled .js alike). */
function knownSuites(runner: string): string[] {
  const match = /const SUITES = \[([^\]]*)\]/.exec(readFileSync(runner, 'utf8'));
  const names = match?.[1]?.match(/'[^']+'/g)?.map((q) => q.slice(1, -1));
  return names !== undefined && names.length > 0 ? names : FALLBACK_SUITES;
}

function runScript(
  script: string,
  argv: readonly string[],
  options: { nodeArgs: readonly string[]; cwd: string; env: NodeJS.ProcessEnv },
): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...options.nodeArgs, script, ...argv], {
      cwd: options.cwd,
      env: options.env,
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
  const suites = locateSuites();
  const given = text(args, 'out');
  const dir = given === undefined ? undefined : resolve(given);
  const child = { nodeArgs: suites.nodeArgs, cwd: suites.cwd, env: { ...process.env } };
  if (flag(args, 'render')) {
    if (args.positionals.length > 0 || flag(args, 'quick')) {
      throw new CommandError('--render takes no suite and no --quick', EXIT.USAGE);
    }
    const target = dir ?? suites.defaultOut;
    const results = join(target, 'results');
    if (!existsSync(results)) {
      throw new CommandError(`there is no ${results} to render from; run litetopic bench first`, EXIT.FAILURE);
    }
    const code = await runScript(suites.runner, ['--render', `--out=${target}`], child);
    return code === 0 ? EXIT.OK : EXIT.FAILURE;
  }
  const seed = args.options.get('seed');
  if (typeof seed === 'number') child.env.LITETOPIC_BENCH_SEED = String(seed);
  const known = knownSuites(suites.runner);
  const unknown = args.positionals.find((s) => !known.includes(s));
  if (unknown !== undefined)
    throw new CommandError(`unknown suite "${unknown}"; suites: ${known.join(', ')}`, EXIT.USAGE);
  if (suites.source && !existsSync(join(PACKAGE_ROOT, 'dist', 'index.js'))) {
    out.error('bench: dist/ is missing; building it first (npm run build:ts)');
    const built = await runScript(join(PACKAGE_ROOT, 'scripts', 'build-ts.mjs'), [], { ...child, nodeArgs: [] });
    if (built !== 0) return EXIT.FAILURE;
  }
  const quick = flag(args, 'quick');
  // A quick run writes only where --out says. Paths are resolved here: a checkout's runner works in
  // the checkout, not in the caller's directory.
  const target = dir ?? (quick ? undefined : suites.defaultOut);
  const argv = [
    ...new Set(args.positionals),
    ...(quick ? ['--quick'] : []),
    ...(target === undefined ? [] : [`--out=${target}`]),
  ];
  const code = await runScript(suites.runner, argv, child);
  return code === EXIT.USAGE ? EXIT.USAGE : code === 0 ? EXIT.OK : EXIT.FAILURE;
}
