/**
 * Argument parsing for the `litetopic` command: declared options checked on top of `node:util`'s
 * `parseArgs` (`--name value`, `--name=value`, bare positionals), every mistake turned into a
 * `UsageError`, which `main.ts` prints as one line on stderr and exits with `EXIT.USAGE`.
 */
import { parseArgs as parseNodeArgs } from 'node:util';

/** Exit codes of every command; README.md "Command line" lists them. */
export const EXIT = {
  /** The command did what was asked. */
  OK: 0,
  /** It ran and failed: an I/O error, a corrupt directory, a broken invariant. */
  FAILURE: 1,
  /** The command line is wrong: unknown command or option, a missing or malformed value. */
  USAGE: 2,
  /** `inspect`: the data directory belongs to a live process; nothing was opened. */
  LOCKED: 3,
  /** Not available in this installation: the native engine was asked for and cannot load, or
   * `bench` found neither the sources (with tsx) nor the compiled suites (dist/bench). */
  UNAVAILABLE: 4,
} as const;

/** A mistake on the command line; its message is printed as is, followed by a hint to use --help. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A failure that already has its exit code and one-line message (no stack trace is useful). */
export class CommandError extends Error {
  override readonly name = 'CommandError';
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export type OptionKind = 'flag' | 'string' | 'integer';

export interface OptionSpec {
  kind: OptionKind;
  /** For integers: the smallest accepted value. */
  min?: number;
  /** For integers: the largest accepted value. */
  max?: number;
  /** For strings: the only accepted values. */
  choices?: readonly string[];
}

export interface ParsedArgs {
  /** Options by name without the dashes; flags are `true`, integers numbers, strings strings. */
  options: Map<string, string | number | boolean>;
  positionals: string[];
}

/** Options every command accepts. */
export const COMMON_OPTIONS: Record<string, OptionSpec> = {
  help: { kind: 'flag' },
  verbose: { kind: 'flag' },
};

function integerValue(name: string, text: string, spec: OptionSpec): number {
  if (!/^-?\d+$/.test(text)) throw new UsageError(`--${name} takes a whole number (got "${text}")`);
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new UsageError(`--${name} is too large (got "${text}")`);
  if (spec.min !== undefined && value < spec.min) throw new UsageError(`--${name} must be at least ${spec.min}`);
  if (spec.max !== undefined && value > spec.max) throw new UsageError(`--${name} must be at most ${spec.max}`);
  return value;
}

function stringValue(name: string, text: string, spec: OptionSpec): string {
  if (spec.choices !== undefined && !spec.choices.includes(text)) {
    throw new UsageError(`--${name} must be one of ${spec.choices.join(', ')} (got "${text}")`);
  }
  return text;
}

/** How `node:util` reports a malformed command line; each becomes a `UsageError`. */
const PARSE_ERRORS = new Set([
  'ERR_PARSE_ARGS_UNKNOWN_OPTION',
  'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
  'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL',
]);

/**
 * Parses `argv` against `specs` (plus the common options) with `node:util`'s `parseArgs`, then
 * checks each value against its spec. `--` ends the options. A value may be attached
 * (`--seconds=5`) or follow (`--seconds 5`); flags take no value.
 */
export function parseArgs(argv: readonly string[], specs: Record<string, OptionSpec>): ParsedArgs {
  const all: Record<string, OptionSpec> = { ...COMMON_OPTIONS, ...specs };
  const config: Record<string, { type: 'boolean' | 'string'; short?: string }> = {};
  for (const [name, spec] of Object.entries(all)) config[name] = { type: spec.kind === 'flag' ? 'boolean' : 'string' };
  (config.help as { short?: string }).short = 'h';
  let parsed: ReturnType<typeof parseNodeArgs>;
  try {
    parsed = parseNodeArgs({ args: [...argv], options: config, strict: true, allowPositionals: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== undefined && PARSE_ERRORS.has(code)) throw new UsageError(usageMessage(error as Error));
    throw error;
  }
  const options = new Map<string, string | number | boolean>();
  for (const [name, value] of Object.entries(parsed.values)) {
    const spec = all[name] as OptionSpec;
    if (value === undefined) continue;
    if (spec.kind === 'flag') options.set(name, true);
    else if (spec.kind === 'integer') options.set(name, integerValue(name, value as string, spec));
    else options.set(name, stringValue(name, value as string, spec));
  }
  return { options, positionals: parsed.positionals };
}

/**
 * One line in the CLI's own words for a `node:util` parse error: its messages span lines and, for an
 * unknown option, add advice about positionals that does not apply to these commands.
 */
function usageMessage(error: Error): string {
  const unknown = /^Unknown option '([^']+)'/.exec(error.message);
  if (unknown !== null) return `unknown option "${unknown[1]}"`;
  return error.message.replace(/\s*\n\s*/g, ' ').trim();
}

/** Typed accessors over `ParsedArgs.options`. */
export function flag(args: ParsedArgs, name: string): boolean {
  return args.options.get(name) === true;
}

export function integer(args: ParsedArgs, name: string, fallback: number): number {
  const value = args.options.get(name);
  return typeof value === 'number' ? value : fallback;
}

export function text(args: ParsedArgs, name: string): string | undefined {
  const value = args.options.get(name);
  return typeof value === 'string' ? value : undefined;
}
