"""The README's nvim-dap configuration, run in a real Neovim: every example's GPU source opens with a
filetype that has the GPU dump configuration, so F5 on it starts a session.

nvim-dap itself is not needed: a stand-in `dap` module (package.preload) records what the
configuration registers. Neovim's own detection takes .cl files for Lisp and .hip ones for conf
(0.7.2 and 0.11.4), which is what the configuration's autocommands correct. Skipped, saying so,
where Neovim is not installed (`apt-get install neovim`).
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NVIM = shutil.which("nvim")
SOURCES = sorted(p for p in (REPO / "examples").rglob("*")
                 if p.suffix in (".hip", ".cu", ".cuh", ".cl") and "dumpgen" not in p.parts)
# what each kind of source is: the filetype names nvim-dap's configurations are looked up by
WANTED = {".hip": "hip", ".cu": "cuda", ".cuh": "cuda", ".cl": "opencl"}


def readme_lua() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("### nvim-dap"):text.index("### Emacs dape")]
    return re.search(r"```lua\n(.*?)```", section, re.S)[1]


STAND_IN = """
package.preload["dap"] = function()
  return { adapters = {}, configurations = {} }
end
"""

PROBE = """
local dap = require("dap")
local out = {}
for _, path in ipairs(vim.fn.json_decode(os.getenv("SOURCES"))) do
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  local ft = vim.bo.filetype
  local configs = dap.configurations[ft] or {}
  out[path] = { filetype = ft, configurations = #configs,
                type = configs[1] and configs[1].type or vim.NIL }
end
out["adapter"] = dap.adapters["aspace-gpu"]
local f = assert(io.open(os.getenv("OUT"), "w"))
f:write(vim.fn.json_encode(out))
f:close()
vim.cmd("qa!")
"""


def test_readme_names_every_gpu_source_kind():
    lua = readme_lua()
    for pattern in ("*.hip", "*.cu", "*.cuh", "*.cl"):
        assert f'"{pattern}"' in lua, pattern
    assert {p.suffix for p in SOURCES} == set(WANTED)


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (apt-get install neovim): the README's "
                                         "nvim-dap configuration was not run")
def test_every_example_source_gets_a_filetype_with_the_gpu_configuration(tmp_path):
    init = tmp_path / "init.lua"
    init.write_text(STAND_IN + readme_lua())
    probe = tmp_path / "probe.lua"
    probe.write_text(PROBE)
    out = tmp_path / "out.json"
    home = tmp_path / "home"
    home.mkdir()
    (home / "aspace-dap").symlink_to(REPO)  # the README's ~/aspace-dap
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "OUT": str(out),
           "SOURCES": json.dumps([str(p) for p in SOURCES])}
    version = subprocess.run([NVIM, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"{version}: {len(SOURCES)} sources")
    subprocess.run([NVIM, "--headless", "-n", "-i", "NONE", "-u", str(init), "-c", f"luafile {probe}"],
                   env=env, cwd=tmp_path, timeout=120, check=True, capture_output=True)
    got = json.loads(out.read_text())
    assert got["adapter"]["command"] == str(home / "aspace-dap" / ".venv" / "bin" / "aspace-dap")
    for path in SOURCES:
        seen = got[str(path)]
        assert seen["filetype"] == WANTED[path.suffix], (path, seen)
        assert seen["configurations"] == 1 and seen["type"] == "aspace-gpu", (path, seen)
