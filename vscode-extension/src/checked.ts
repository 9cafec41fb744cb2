// Checked readers of a server reply's fields: each names the field and what it held when the reply
// is not what the protocol says (a ProtocolError), for the parsers of the custom requests' bodies.

import { ProtocolError } from './protocol';

export function fail(what: string, expected: string, value: unknown): never {
  throw new ProtocolError(`${what}: expected ${expected}, got ${JSON.stringify(value)}`);
}

export function obj(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(what, 'an object', value);
  return value as Record<string, unknown>;
}

export function int(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) fail(what, 'a non-negative integer', value);
  return value as number;
}

export function str(value: unknown, what: string): string {
  if (typeof value !== 'string') fail(what, 'a string', value);
  return value as string;
}

export function list(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) fail(what, 'a list', value);
  return value as unknown[];
}
