// Which memory space "Open Shared Memory" and "Open Private Memory of This
// Lane" mean, chosen by the server's `kind` so AMD, NVIDIA and Intel dumps
// all work, and how spaces are listed in the picker.

import type { MemorySpace, MemorySpaceKind } from './protocol';

/** How each kind is named to the user, with every vendor's word for it. */
export const MEMORY_KIND_TITLES: Record<MemorySpaceKind, string> = {
  workgroup: 'workgroup shared memory (LDS / shared / SLM)',
  lane: 'private memory of the focused lane (scratch / local / private)',
  wave: 'private memory of the whole wave',
  device: 'device memory',
};

/** The first space of `kind` the server lists (it lists the focused lane's own space for "lane"). */
export function spaceOfKind(spaces: readonly MemorySpace[], kind: MemorySpaceKind): MemorySpace | undefined {
  return spaces.find((space) => space.kind === kind);
}

/** Shown when the wave has no space of `kind`, listing what it has instead. */
export function missingSpaceMessage(spaces: readonly MemorySpace[], kind: MemorySpaceKind): string {
  const known = spaces.map((s) => (s.kind === undefined ? s.name : `${s.name} (${s.kind})`));
  return `This wave has no ${MEMORY_KIND_TITLES[kind]} (memory spaces: ${[...new Set(known)].join(', ') || 'none'}).`;
}

export interface MemorySpacePick {
  label: string;
  description: string;
  detail: string;
  space: MemorySpace;
}

/** Quick pick entries: the vendor's name, its scope and size, and the reference it opens. */
export function memorySpacePicks(spaces: readonly MemorySpace[]): MemorySpacePick[] {
  return spaces.map((space) => ({
    label: space.name,
    description: `${space.kind ?? 'other'} · ${space.size} bytes`,
    detail: space.memoryReference,
    space,
  }));
}
