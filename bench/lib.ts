/**
 * The package as users run it: the compiled build in dist/, loaded the way `require('litetopic')`
 * loads it. Benchmarks measure this rather than the TypeScript sources run through a transpiler,
 * whose module wrappers add calls to hot paths that the shipped build does not have. Types still come
 * from the sources, so type checking needs no build.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type * as Api from '../ts/index.js';

const entry = join(__dirname, '..', 'dist', 'index.js');
if (!existsSync(entry)) {
  throw new Error(`bench: ${entry} is missing; run "npm run build" first (npm run bench does it for you)`);
}

export const lib = createRequire(__filename)(entry) as typeof Api;
