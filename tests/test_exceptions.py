"""exceptionInfo: a fault in each vendor's own core format, put in the vendor's words.

examples/fault/ is a store through a bad pointer (`*slot = gid` with slot = out + gid * (1 << 20)),
built by each vendor's compiler; its dumps stop on the faulting store (examples/dumpgen/fault.py)
and are written here as cores with each vendor's core writer, marked as the hardware marks a fault.
The expected texts follow the vendors' tools, not our reader:

- CUDA: CUDBGException_t 14 is cuda-gdb's signal CUDA_EXCEPTION_14, "Warp Illegal Address"
  (gdb/signals.def), printed "CUDA Exception: Warp Illegal Address" and "The exception was triggered at
  PC <errorPC>" (cuda-exceptions.c); the error PC is the `ST.E` nvdisasm lists at 0x2b0.
- ROCm: TRAPSTS MEM_VIOL (bit 8) with XNACK_ERROR (bit 28) is ROCdbgapi's MEMORY_VIOLATION; MEM_VIOL
  alone its ADDRESS_ERROR; ROCgdb reports them as SIGSEGV and SIGBUS (amd-dbgapi-target.c).
- Intel: NT_SIGINFO's signal 11 is GDB's SIGSEGV, "Segmentation fault", si_code 1 Linux's SEGV_MAPERR,
  si_addr the faulting address (gdb-oneapi's `print $_siginfo`).
"""

from __future__ import annotations

import os
import sys

import pytest

from dap_client import REPO_ROOT, RequestFailed, launched
from names_tools import cxxfilt, plain_function

sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
from dumpgen import fault  # noqa: E402

from aspace_dap.adapters.amdgpu.core_writer import write_rocm_core  # noqa: E402
from aspace_dap.adapters.amdgpu.exceptions import stop_reasons  # noqa: E402
from aspace_dap.adapters.intel.core_writer import write_core as write_intel_core  # noqa: E402
from aspace_dap.adapters.nvidia.core_writer import write_core as write_cuda_core  # noqa: E402
from aspace_dap.session import Session  # noqa: E402
from aspace_dap.state import load_state  # noqa: E402

DUMPS = os.path.join(REPO_ROOT, "examples", "fault", "dumps")
MEM_VIOL, XNACK_ERROR, ILLEGAL_INST = 1 << 8, 1 << 28, 1 << 11
STOPPED = 1 << 30
OUT = {"amd": 0x7F0000100000, "cuda": 0x7F1000000000, "intel": 0x7F0000200000}  # the kernels' `out`
STRIDE_BYTES = 4 << 20  # stride 1 << 20 ints


def _rocm_core(tmp_path, trapsts=MEM_VIOL | XNACK_ERROR):
    with load_state(os.path.join(DUMPS, "clang19.gfx90a.O2")) as state:
        return write_rocm_core(state, tmp_path / "gpucore.4242", exception_wave=0, exception_trapsts=trapsts)


def _cuda_core(tmp_path):
    # lane 1 (gid 1) of warp 0 is the first to store out of bounds; its warp's error PC is the ST.E
    with load_state(os.path.join(DUMPS, "sm_90.G")) as state:
        return write_cuda_core(state, tmp_path / "fault.cudacore", exception=(0, 1, 14, 0x2B0))


def _intel_core(tmp_path):
    # the device a Tiger Lake GT2 names in NT_PRPSINFO (PCI id 0x9A49), as gdb-oneapi writes it
    with load_state(os.path.join(DUMPS, "tgllp.O0")) as state:
        return write_intel_core(state, tmp_path / "gpu.core", fault_address=OUT["intel"] + STRIDE_BYTES,
                                device_id=0x9A49)


def _exception_info(core):
    client, stopped = launched(core)
    try:
        assert client.capabilities.get("supportsExceptionInfoRequest") is True
        assert stopped["reason"] == "exception"
        return client.request("exceptionInfo", {"threadId": stopped["threadId"]}), client.request("threads")
    finally:
        client.close()


# ---- the vendors' rules, bit by bit ----------------------------------------------------------------------


@pytest.mark.parametrize("trapsts, mode, ttmp6, reasons", [
    (MEM_VIOL | XNACK_ERROR, 0, STOPPED, ["MEMORY_VIOLATION"]),
    (MEM_VIOL, 0, STOPPED, ["ADDRESS_ERROR"]),
    (ILLEGAL_INST, 0, STOPPED, ["ILLEGAL_INSTRUCTION"]),
    (1 << 2, 0, STOPPED, []),  # EXCP.DIV0 without MODE.EXCP_EN.DIV0: masked
    (1 << 2, 1 << 14, STOPPED, ["FP_DIVIDE_BY_0"]),
    (1 << 6, 1 << 18, None, ["INT_DIVIDE_BY_0"]),
    (0, 0, STOPPED | 2 << 25, ["ASSERT_TRAP"]),  # s_trap 2, saved in ttmp6[28:25]
    (0, 0, 2 << 25, []),  # a trap id the handler did not stop on
    (0, 0, STOPPED | 7 << 25, ["TRAP"]),
])
def test_rocdbgapi_stop_reasons(trapsts, mode, ttmp6, reasons):
    assert stop_reasons(trapsts, mode, ttmp6) == reasons


# ---- one fault per vendor, in its own core format, over DAP ------------------------------------------------


def test_cuda_warp_illegal_address(tmp_path):
    info, _ = _exception_info(_cuda_core(tmp_path))
    assert info["exceptionId"] == "CUDA_EXCEPTION_14"
    assert info["breakMode"] == "always"
    assert info["description"] == ("CUDA Exception: Warp Illegal Address. The exception was triggered at PC 0x2b0 "
                                   "in scatter (fault.cu:9).")
    lines = info["details"]["stackTrace"].splitlines()
    scatter = plain_function(cxxfilt("_Z7scatterPii")[0])  # the kernel's symbol, as the demangler reads it
    assert lines[0].startswith(f"Faulting instruction: 0x2b0 <{scatter}+0x2b0>") and "(fault.cu:9)" in lines[0]
    assert "The lanes stand at 0x2c0, past the faulting instruction" in lines
    assert "Raised by 1 lane in 1 wave (wave 0)" in lines
    assert info["details"]["typeName"] == "CUDA_EXCEPTION_14"


def test_the_faulting_instruction_is_the_vendors_decoding(tmp_path):
    """The details name the instruction as the vendor's decoder prints it: nvdisasm's `ST.E` at the error
    PC, LLVM's `global_store_dword` at the AMD wave's PC (examples/fault's listings)."""
    from disassembly_tools import tool_or_skip
    from aspace_dap.adapters import adapter_for
    tool_or_skip(adapter_for("nvidia").disassembler())
    tool_or_skip(adapter_for("amd").disassembler())
    cuda, _ = _exception_info(_cuda_core(tmp_path))
    scatter = plain_function(cxxfilt("_Z7scatterPii")[0])
    assert cuda["details"]["stackTrace"].splitlines()[0] == (
        f"Faulting instruction: 0x2b0 <{scatter}+0x2b0>: ST.E desc[UR4][R2.64], R4 (fault.cu:9)")
    rocm, _ = _exception_info(_rocm_core(tmp_path))
    first = rocm["details"]["stackTrace"].splitlines()[0]
    assert first.startswith("Instruction at the stop: 0x") and ": global_store_dword v[0:1], v2, off (fault.hip:10)" in first


def test_rocm_memory_violation_shared_by_two_waves(tmp_path):
    info, threads = _exception_info(_rocm_core(tmp_path))
    assert info["exceptionId"] == "SIGSEGV"
    assert info["description"] == ("Memory violation (MEMORY_VIOLATION). The wave stopped at PC 0x184c "
                                   "in scatter (fault.hip:10).")
    lines = info["details"]["stackTrace"].splitlines()
    scatter = plain_function(cxxfilt("_Z7scatterPii")[0])
    assert lines[0].startswith(f"Instruction at the stop: 0x184c <{scatter}+0x4c>") and lines[0].endswith(" (fault.hip:10)")
    # both waves of work-group 0 stored out of bounds: 2 x 64 lanes, as `info waves` names them
    assert "Raised by 128 lanes in 2 waves (waves 0-1)" in lines
    assert "TRAPSTS 0x10000100" in lines
    assert any("PC may be past the faulting instruction" in line for line in lines)
    assert len(threads["threads"]) == 2


def test_rocm_mem_viol_alone_is_an_address_error(tmp_path):
    # MEM_VIOL without XNACK_ERROR on the faulting wave; wave 1 keeps MEM_VIOL | XNACK_ERROR from the dump
    info, _ = _exception_info(_rocm_core(tmp_path, trapsts=MEM_VIOL))
    assert info["exceptionId"] == "SIGBUS"
    assert info["description"].startswith("Address error (aperture violation) (ADDRESS_ERROR).")
    lines = info["details"]["stackTrace"].splitlines()
    assert "Raised by 64 lanes in 1 wave (wave 0)" in lines
    assert "Also SIGSEGV (Memory violation (MEMORY_VIOLATION)) in 64 lanes in 1 wave (wave 1)" in lines


def test_intel_page_fault(tmp_path):
    info, _ = _exception_info(_intel_core(tmp_path))
    assert info["exceptionId"] == "SIGSEGV"
    assert info["description"] == "Segmentation fault. The wave stopped at PC 0x6f0 in scatter (fault.cl:9)."
    lines = info["details"]["stackTrace"].splitlines()
    # the store's send as IGA prints it, where iga64 is installed
    assert lines[0].startswith("Instruction at the stop: 0x6f0") and lines[0].endswith(" (fault.cl:9)")
    assert f"Faulting address: {OUT['intel'] + STRIDE_BYTES:#x}" in lines
    assert "Raised by 8 lanes in 1 wave (wave 0)" in lines  # the SIMD8 thread
    assert "si_code 1 (SEGV_MAPERR: address not mapped to object)" in lines


def test_a_dump_folder_answers_from_its_stop(tmp_path):
    """A dump folder has no field for the vendor's exception record: the stop's own text, and its pc."""
    info, _ = _exception_info(os.path.join(DUMPS, "sm_90.G"))
    assert info["exceptionId"] == "GPU exception"
    assert info["description"].startswith("CUDA Exception: Warp Illegal Address (14). "
                                          "The exception was triggered at PC 0x2b0 in scatter (fault.cu:9)")


def test_the_amd_dump_folder_keeps_its_trap_status():
    info, _ = _exception_info(os.path.join(DUMPS, "clang19.gfx90a.O2"))
    assert info["exceptionId"] == "SIGSEGV" and "Raised by 128 lanes in 2 waves (waves 0-1)" in \
        info["details"]["stackTrace"].splitlines()


def test_no_exception_no_info():
    client, stopped = launched(os.path.join(REPO_ROOT, "examples", "lds_tiles", "dumps", "gfx90a.O0"))
    try:
        assert stopped["reason"] != "exception"
        with pytest.raises(RequestFailed, match="raised no exception"):
            client.request("exceptionInfo", {"threadId": stopped["threadId"]})
    finally:
        client.close()


def test_the_fault_values_at_the_store(tmp_path):
    """What a triage reads next: the bad pointer and the work-item that stored through it."""
    s = Session.open(str(_intel_core(tmp_path)))
    from aspace_dap.lane_values import lane_values

    wave = s.wave()
    slot = [int(r["value"].split()[-1], 16) for r in lane_values(s, "slot", wave_id=wave.id)]
    assert slot == [OUT["intel"] + gid * STRIDE_BYTES for gid in range(8)]
    assert [r["value"] for r in lane_values(s, "get_global_id(0)", wave_id=wave.id)] == [str(g) for g in range(8)]


def test_the_committed_fault_dumps_are_current():
    try:
        from dumpgen.cuda_engine import nvdisasm
        nvdisasm()
    except FileNotFoundError as exc:
        pytest.skip(f"the CUDA dump needs nvdisasm: {exc}")
    assert fault.main(["--check"]) == 0
