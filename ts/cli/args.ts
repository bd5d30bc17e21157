/**
 * Argument parsing for the `litetopic` command: a small declarative parser (no dependency) that
 * accepts `--name value`, `--name=value` and bare positionals, and turns every mistake into a
 * `UsageError`, which `main.ts` prints as one line and exits with `EXIT.USAGE`.
 */

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

/**
 * Parses `argv` against `specs` (plus the common options). `--` ends the options. A value may be
 * attached (`--seconds=5`) or follow (`--seconds 5`); flags take no value.
 */
export function parseArgs(argv: readonly string[], specs: Record<string, OptionSpec>): ParsedArgs {
  const all = { ...COMMON_OPTIONS, ...specs };
  const options = new Map<string, string | number | boolean>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h') {
      options.set('help', true);
      continue;
    }
    if (!arg.startsWith('--') || arg === '-') {
      if (arg.startsWith('-') && arg !== '-') throw new UsageError(`unknown option "${arg}"`);
      positionals.push(arg);
      continue;
    }
    const equals = arg.indexOf('=');
    const name = arg.slice(2, equals < 0 ? undefined : equals);
    const spec = Object.hasOwn(all, name) ? all[name] : undefined;
    if (spec === undefined) throw new UsageError(`unknown option "--${name}"`);
    if (spec.kind === 'flag') {
      if (equals >= 0) throw new UsageError(`--${name} takes no value`);
      options.set(name, true);
      continue;
    }
    let text: string | undefined;
    if (equals >= 0) text = arg.slice(equals + 1);
    else {
      text = argv[i + 1];
      if (text === undefined || text.startsWith('--')) throw new UsageError(`--${name} needs a value`);
      i++;
    }
    options.set(name, spec.kind === 'integer' ? integerValue(name, text, spec) : stringValue(name, text, spec));
  }
  return { options, positionals };
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
