/**
 * The shapes of the state journal's records (persist.ts `StateRecord`), checked before replay applies
 * one. A record passed its frame's checksum, but that only says it is what some writer wrote: replay
 * must not turn a wrong type into a TypeError, a NaN into a stuck progress, or a huge offset into an
 * allocation as large. Each check throws `BadRecord` with what is wrong; replay adds the file and the
 * record's place and throws `LogCorruptError` (docs/BROKER.md, "Persistence").
 *
 * The checks are of types and ranges, not of policy: a name is a non-empty string no longer than any
 * name the broker accepts, whatever its characters, since a release may relax its name rules.
 */

import { MAX_LITE_TOPIC_BYTES_CEILING } from '../common/limits.js';
import { InvalidArgumentError } from '../errors.js';
import { checkKeyShared } from './key-shared.js';
import type { GroupConfig } from './state.js';

/** What is wrong with a record; replay turns it into `LogCorruptError` naming the file and record. */
export class BadRecord extends Error {}

/** Longest name in a record: no topic, group or lite topic name can be longer. */
const MAX_NAME_LENGTH = MAX_LITE_TOPIC_BYTES_CEILING;
/** Attempts are written as u32 in binary records. */
const MAX_ATTEMPT = 0xffff_ffff;

export function checkName(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    throw new BadRecord(`${what} is not a name of 1 to ${MAX_NAME_LENGTH} characters`);
  }
  return value;
}

/** An offset: an integer from 0 to 2^53 - 1. */
export function checkOffset(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new BadRecord(`${what} is not an offset (a non-negative integer)`);
  }
  return value;
}

export function checkAttempt(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_ATTEMPT) {
    throw new BadRecord(`${what} is not an attempt count (an integer from 0 to ${MAX_ATTEMPT})`);
  }
  return value;
}

/** A clock time in ms (an invisible deadline): any finite number. */
export function checkTime(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new BadRecord(`${what} is not a finite time`);
  return value;
}

function checkObject(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new BadRecord(`${what} is not an object`);
  }
  return value as Record<string, unknown>;
}

/** A list of numbers whose length is a multiple of `width` (a JSON delivery list). */
export function checkNumbers(value: unknown, width: number, what: string): readonly unknown[] {
  if (!Array.isArray(value) || value.length % width !== 0) {
    throw new BadRecord(`${what} is not a list of ${width}-number deliveries`);
  }
  return value;
}

/** A topic's persisted attributes, with only the fields this release knows. */
export function checkTopicAttributes(value: unknown): { liteTopicExpirationMs?: number } {
  const attributes = checkObject(value, 'the topic attributes');
  const expiration = attributes.liteTopicExpirationMs;
  if (expiration === undefined) return {};
  if (typeof expiration !== 'number' || !Number.isSafeInteger(expiration) || expiration < 0) {
    throw new BadRecord('liteTopicExpirationMs is not a non-negative integer');
  }
  return { liteTopicExpirationMs: expiration };
}

/** A group's configuration as `createGroup` records it, rebuilt from its checked fields. */
export function checkGroupConfig(value: unknown): GroupConfig {
  const config = checkObject(value, 'the group configuration');
  const bindTopic = checkName(config.bindTopic, 'bindTopic');
  const { subModel, wildcard, maxReconsumeTimes, dialect } = config;
  if (subModel !== 'shared' && subModel !== 'exclusive') throw new BadRecord('subModel is not "shared" or "exclusive"');
  if (typeof wildcard !== 'boolean') throw new BadRecord('wildcard is not a boolean');
  if (dialect !== 'lite') throw new BadRecord('dialect is not "lite"');
  if (typeof maxReconsumeTimes !== 'number' || !Number.isSafeInteger(maxReconsumeTimes) || maxReconsumeTimes < 0) {
    throw new BadRecord('maxReconsumeTimes is not a non-negative integer');
  }
  const checked: GroupConfig = { bindTopic, subModel, wildcard, maxReconsumeTimes, dialect };
  if (config.keyShared !== undefined) {
    try {
      checked.keyShared = checkKeyShared(config.keyShared);
    } catch (error) {
      if (error instanceof InvalidArgumentError) throw new BadRecord(error.message);
      throw error;
    }
  }
  return checked;
}
