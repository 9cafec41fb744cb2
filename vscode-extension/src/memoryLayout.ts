// Reading a page of GPU memory through readMemory (holes included) and the
// server's memoryLayout answer: which variables occupy which bytes.

export interface MemoryPage {
  /** Address of the first byte (the server's numbering of the space). */
  address: bigint;
  bytes: Uint8Array;
  /** false: the dump does not hold this byte. */
  valid: boolean[];
}

/** One scalar element of a variable, typed from its DWARF type by the server. */
export interface PlacedElement {
  address: bigint;
  size: number;
  /** float, signed, unsigned, bool or pointer */
  kind: string;
}

export interface PlacedVariable {
  name: string;
  type: string;
  address: bigint;
  size: number;
  memoryReference?: string;
  /** The variable's scalar elements in the requested range, when the server listed them. */
  elements?: PlacedElement[];
}

function parseElements(value: unknown): PlacedElement[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out: PlacedElement[] = [];
  for (const item of value) {
    const address = field(item, 'address');
    const size = field(item, 'size');
    const kind = field(item, 'kind');
    if (typeof address !== 'string' || typeof size !== 'number' || typeof kind !== 'string') continue;
    try {
      out.push({ address: BigInt(address), size, kind });
    } catch {
      // an address that is not a number is skipped
    }
  }
  return out;
}

export interface MemoryRequester {
  customRequest(command: string, args?: unknown): Thenable<unknown>;
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

/** `count` bytes from `offset` past the reference; unreadable runs are marked, never zero-filled. */
export async function readPage(
  session: MemoryRequester,
  memoryReference: string,
  offset: number,
  count: number,
): Promise<MemoryPage> {
  const bytes = new Uint8Array(count);
  const valid = new Array<boolean>(count).fill(false);
  let address: bigint | undefined;
  let done = 0;
  while (done < count) {
    const body = await session.customRequest('readMemory', { memoryReference, offset: offset + done, count: count - done });
    const at = field(body, 'address');
    if (address === undefined && typeof at === 'string') address = BigInt(at) - BigInt(done);
    const data = field(body, 'data');
    const chunk = typeof data === 'string' ? Buffer.from(data, 'base64') : Buffer.alloc(0);
    bytes.set(chunk.subarray(0, count - done), done);
    for (let i = 0; i < Math.min(chunk.length, count - done); i++) valid[done + i] = true;
    done += chunk.length;
    const unreadable = field(body, 'unreadableBytes');
    const skip = typeof unreadable === 'number' && unreadable > 0 ? unreadable : 0;
    if (chunk.length === 0) {
      // nothing readable here: the server says how far the hole goes (else give up on the rest)
      done += skip > 0 ? skip : count - done;
    }
  }
  return { address: address ?? BigInt(offset), bytes, valid };
}

export function parseMemoryLayout(body: unknown): PlacedVariable[] {
  const list = field(body, 'variables');
  if (!Array.isArray(list)) return [];
  const out: PlacedVariable[] = [];
  for (const item of list) {
    const name = field(item, 'name');
    const type = field(item, 'type');
    const address = field(item, 'address');
    const size = field(item, 'size');
    if (typeof name !== 'string' || typeof address !== 'string' || typeof size !== 'number') continue;
    try {
      out.push({
        name,
        type: typeof type === 'string' ? type : '',
        address: BigInt(address),
        size,
        memoryReference: typeof field(item, 'memoryReference') === 'string' ? (field(item, 'memoryReference') as string) : undefined,
        elements: parseElements(field(item, 'elements')),
      });
    } catch {
      // an address that is not a number is skipped
    }
  }
  return out;
}
