#!/usr/bin/env node
/**
 * The `litetopic` command: `litetopic <demo|bench|inspect> [options]`. Each subcommand declares its
 * options and help text in its own module; this file parses, dispatches and turns failures into one
 * line on stderr and an exit code (args.ts `EXIT`). Stack traces only with `--verbose`.
 */
import { LitetopicError } from '../index.js';
import { CommandError, EXIT, flag, type OptionSpec, parseArgs, UsageError } from './args.js';
import { BENCH_HELP, BENCH_OPTIONS, runBench } from './bench.js';
import { DEMO_HELP, DEMO_OPTIONS, runDemo } from './demo.js';
import { INSPECT_HELP, INSPECT_OPTIONS, runInspect } from './inspect.js';
import { Output } from './output.js';
import { packageVersion } from './package.js';
import { REPAIR_HELP, REPAIR_OPTIONS, runRepair } from './repair.js';

interface Command {
  summary: string;
  help: string;
  options: Record<string, OptionSpec>;
  run: (args: ReturnType<typeof parseArgs>, out: Output) => Promise<number>;
}

const COMMANDS: Record<string, Command> = {
  demo: {
    summary: 'run an agent-to-agent bus on an embedded broker and report per group (what npm start runs)',
    help: DEMO_HELP,
    options: DEMO_OPTIONS,
    run: runDemo,
  },
  bench: {
    summary: 'run the benchmark suites; write their JSON, RESULTS.md and charts (bench/ or --out)',
    help: BENCH_HELP,
    options: BENCH_OPTIONS,
    run: runBench,
  },
  inspect: {
    summary: "print a data directory's broker, topics, groups and lite topics, read-only (--json for scripts)",
    help: INSPECT_HELP,
    options: INSPECT_OPTIONS,
    run: runInspect,
  },
  repair: {
    summary: 'cut the damage a normal open refuses (LOG_CORRUPT) out of a data directory, and what follows it',
    help: REPAIR_HELP,
    options: REPAIR_OPTIONS,
    run: runRepair,
  },
};

const MAIN_HELP = `usage: litetopic <command> [options]

commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(9)}${c.summary}`)
  .join('\n')}

"litetopic <command> --help" describes a command's options.
options: --help, --version, --verbose (stack traces on errors)
exit codes: 0 ok, 1 failure, 2 usage error, 3 data directory in use by a live process (repair),
            4 not available in this installation (native engine, or bench without its suites)`;

/** One line for an error: the code of a LitetopicError, then its message. */
function describe(error: unknown): string {
  if (error instanceof LitetopicError) return `${error.code}: ${error.message}`;
  if (error instanceof Error) return error.message;
  return String(error);
}

export async function main(argv: readonly string[], out = new Output()): Promise<number> {
  const [name, ...rest] = argv;
  const verbose = argv.includes('--verbose');
  if (name === undefined) {
    // No command is a usage error: the usage goes to stderr, where a script's errors go.
    out.error(MAIN_HELP);
    return EXIT.USAGE;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    out.info(MAIN_HELP);
    return EXIT.OK;
  }
  if (name === '--version') {
    out.info(packageVersion());
    return EXIT.OK;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command === undefined) {
    out.error(`litetopic: unknown command "${name}"; commands: ${Object.keys(COMMANDS).join(', ')} (see --help)`);
    return EXIT.USAGE;
  }
  try {
    const args = parseArgs(rest, command.options);
    if (flag(args, 'help')) {
      out.info(command.help);
      return EXIT.OK;
    }
    return await command.run(args, out);
  } catch (error) {
    if (error instanceof UsageError || (error instanceof CommandError && error.exitCode === EXIT.USAGE)) {
      out.error(`litetopic ${name}: ${error.message} (see litetopic ${name} --help)`);
      return EXIT.USAGE;
    }
    out.error(`litetopic ${name}: ${describe(error)}`);
    if (verbose && error instanceof Error && !(error instanceof CommandError)) out.error(error.stack ?? '');
    if (error instanceof CommandError) return error.exitCode;
    if (error instanceof LitetopicError && error.code === 'ENGINE_UNAVAILABLE') return EXIT.UNAVAILABLE;
    return EXIT.FAILURE;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`litetopic: ${describe(error)}\n`);
      process.exitCode = EXIT.FAILURE;
    },
  );
}
