"""memoryLayout: which variables of the focused frame occupy which bytes of a memory range.

Sizes are the C types' (float tile[16][17], float row_sums[16]; the Particle struct of
scratch_struct is 72 bytes, examples/scratch_struct/README.md), places are the frame's variables'
own memory references, and the bytes there are the variables' values.
"""

import base64
import os
import struct

from dap_client import REPO_ROOT, launched


def layout(c, tid, ref, offset, count):
    return c.request("memoryLayout", {"threadId": tid, "memoryReference": ref, "offset": offset,
                                      "count": count})["variables"]


def test_shared_memory_of_cuda_lds_tiles():
    c, stopped = launched(os.path.join(REPO_ROOT, "examples", "cuda", "dumps", "lds_tiles.sm_90.G"))
    try:
        tid = stopped["threadId"]
        shared = next(s for s in c.request("memorySpaces", {"threadId": tid})["spaces"] if s["kind"] == "workgroup")
        found = {v["name"]: v for v in layout(c, tid, shared["memoryReference"], 0, shared["size"])}
        assert found["tile"]["size"] == 16 * 17 * 4 and found["row_sums"]["size"] == 16 * 4
        spans = sorted((int(v["address"], 16), int(v["address"], 16) + v["size"]) for v in found.values())
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:])), "no overlap"
        assert spans[-1][1] <= shared["size"]
        frame = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
        # the marked bytes are the variable's bytes
        row_sums = c.request("evaluate", {"expression": "row_sums", "frameId": frame})
        assert row_sums["memoryReference"] == found["row_sums"]["memoryReference"]
        raw = base64.b64decode(c.request("readMemory", {"memoryReference": found["row_sums"]["memoryReference"],
                                                        "count": 64})["data"])
        first = c.request("evaluate", {"expression": "row_sums[0]", "frameId": frame})["result"]
        assert struct.unpack("<f", raw[:4])[0] == float(first)
        # a page holding only part of a variable still names it; a page past everything names nothing
        at = int(found["row_sums"]["address"], 16)
        assert [v["name"] for v in layout(c, tid, shared["memoryReference"], at + 8, 4)] == ["row_sums"]
        assert layout(c, tid, shared["memoryReference"], shared["size"], 256) == []
        c.request("disconnect")
    finally:
        c.close()


def test_a_lanes_scratch_and_another_lanes():
    c, stopped = launched(os.path.join(REPO_ROOT, "examples", "scratch_struct", "dumps", "gfx90a.O0"))
    try:
        tid = stopped["threadId"]
        found = {v["name"]: v for v in layout(c, tid, "private_lane@wave0.lane5#0x0", 0, 0x140)}
        assert found["p"]["memoryReference"] == "private_lane@wave0.lane5#0x48" and found["p"]["size"] == 72
        assert found["p"]["type"] == "Particle"
        # another lane's scratch is another memory: the focused lane's variables are not in it
        assert layout(c, tid, "private_lane@wave0.lane6#0x0", 0, 0x140) == []
        c.request("disconnect")
    finally:
        c.close()


def test_each_element_in_its_own_type():
    """The Particle struct of scratch_struct.hip, laid out by C's rules for its members: float pos[3],
    vel[3], force[3], mass at 36, int id at 40, unsigned flags at 44, int neighbors[6] from 48."""
    c, stopped = launched(os.path.join(REPO_ROOT, "examples", "scratch_struct", "dumps", "gfx90a.O0"))
    try:
        tid = stopped["threadId"]
        found = {v["name"]: v for v in layout(c, tid, "private_lane@wave0.lane5#0x0", 0, 0x140)}
        p = found["p"]
        base = int(p["address"], 16)
        elements = [(int(e["address"], 16) - base, e["size"], e["kind"]) for e in p["elements"]]
        want = ([(4 * i, 4, "float") for i in range(10)] + [(40, 4, "signed"), (44, 4, "unsigned")]
                + [(48 + 4 * i, 4, "signed") for i in range(6)])
        assert elements == want
        history = found["history"]
        assert [e["kind"] for e in history["elements"]] == ["float"] * 24
        # the bytes of p.mass read as a float are the value `p.mass` evaluates to
        frame = c.request("stackTrace", {"threadId": tid})["stackFrames"][0]["id"]
        mass = next(e for e in p["elements"] if int(e["address"], 16) == base + 36)
        raw = base64.b64decode(c.request("readMemory", {"memoryReference": "private_lane@wave0.lane5#0x0",
                                                        "offset": int(mass["address"], 16), "count": 4})["data"])
        assert struct.unpack("<f", raw)[0] == float(c.request("evaluate", {"expression": "p.mass",
                                                                           "frameId": frame})["result"])
        # a range over part of the struct lists only the elements inside it
        part = {v["name"]: v for v in layout(c, tid, "private_lane@wave0.lane5#0x0", base + 38, 4)}
        assert [(int(e["address"], 16) - base, e["kind"]) for e in part["p"]["elements"]] == [
            (36, "float"), (40, "signed")]
        c.request("disconnect")
    finally:
        c.close()
