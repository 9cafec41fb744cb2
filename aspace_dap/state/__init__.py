"""The GPU state dump (format 1): model, reader, writer, validator.

Files are memory-mapped, never copied; bytes the dump does not hold read as unavailable
(valid False), never as zero. Writes go to in-memory overlays; `GpuState.save` writes a new dump.
"""

from .files import DumpFiles, FileSpan
from .memory import Region, SparseMemory
from .model import (Aperture, CodeObjectRef, Dispatch, Fault, Focus, GpuState, Stop, Target, Wave, Workgroup,
                    lanes_to_mask, mask_to_lanes)
from .numbers import parse_number
from .private import PER_LANE, SWIZZLED, PrivateMemory, swizzle, unswizzle
from .problems import Problem
from .reader import load_state
from .registers import RegisterFile
from .validate import check_manifest, validate_state
from .writer import Blob, DispatchBuilder, StateWriter, WorkgroupBuilder

__all__ = [
    "Aperture", "Blob", "CodeObjectRef", "Dispatch", "DispatchBuilder", "DumpFiles", "Fault", "FileSpan", "Focus",
    "GpuState", "PER_LANE", "PrivateMemory", "Problem", "Region", "RegisterFile", "SWIZZLED", "SparseMemory",
    "StateWriter", "Stop", "Target", "Wave", "Workgroup", "WorkgroupBuilder", "check_manifest",
    "lanes_to_mask", "load_state", "mask_to_lanes", "parse_number", "swizzle", "unswizzle", "validate_state",
]
