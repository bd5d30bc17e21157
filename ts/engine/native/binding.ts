/**
 * The shape of the native addon, taken from the generated `binding.d.ts` (the contract with Rust).
 * Only `ts/engine/native/*` and the loader import this file.
 */
import type * as Generated from '../../../binding.js';

export type NativeBinding = typeof Generated;
