/**
 * Where the command line writes: results to stdout, diagnostics to stderr, and a live status line
 * that is rewritten in place on a terminal and printed as plain periodic lines otherwise (pipes,
 * CI logs, tests).
 */
export class Output {
  private statusShown = false;

  constructor(
    private readonly stdout: NodeJS.WriteStream = process.stdout,
    private readonly stderr: NodeJS.WriteStream = process.stderr,
  ) {}

  /** Whether stdout is a terminal (status lines are then rewritten in place). */
  get isTTY(): boolean {
    return this.stdout.isTTY === true;
  }

  /** A result line on stdout. */
  info(line: string): void {
    this.endLine();
    this.stdout.write(`${line}\n`);
  }

  /** A diagnostic line on stderr. */
  error(line: string): void {
    this.endLine();
    this.stderr.write(`${line}\n`);
  }

  /** A progress line: replaces the previous one on a terminal, else printed as its own line. */
  status(line: string): void {
    if (!this.isTTY) {
      this.stdout.write(`${line}\n`);
      return;
    }
    const width = Math.max(20, (this.stdout.columns ?? 120) - 1);
    this.stdout.write(`\r\x1b[2K${line.length > width ? line.slice(0, width) : line}`);
    this.statusShown = true;
  }

  /** Ends a live status line so the next output starts on a fresh line. */
  endLine(): void {
    if (!this.statusShown) return;
    this.stdout.write('\n');
    this.statusShown = false;
  }
}
