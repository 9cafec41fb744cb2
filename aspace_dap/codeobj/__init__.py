"""Device code objects: ELF loading, offload bundles, AMDGPU metadata and kernel descriptors."""

from .bundle import BundleEntry, parse_bundles
from .codeobject import CodeObject, Symbol
from .descriptor import KernelDescriptor
from .loader import load_code_objects
from .metadata import KernelInfo

__all__ = [
    "BundleEntry",
    "CodeObject",
    "KernelDescriptor",
    "KernelInfo",
    "Symbol",
    "load_code_objects",
    "parse_bundles",
]
