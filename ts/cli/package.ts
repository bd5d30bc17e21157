/** Where the package lives, for the commands that read its files. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The package root: two levels up from dist/cli (built, installed) or ts/cli (run through tsx). */
export const PACKAGE_ROOT = join(__dirname, '..', '..');

/** The package version from package.json, or "unknown" if it cannot be read. */
export function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
