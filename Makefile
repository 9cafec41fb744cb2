PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-python test-extension extension-deps test-host host-deps setup bench clean vsix

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m aspace_dap demo

# The Python tests run beside the extension's build, tests and host checks (their lines interleave);
# the tests themselves in one worker more than there are cores, since many wait on a server process or
# a timeout (pytest-xdist, an idle worker takes tests queued for another; PYTEST_JOBS=1 runs them in
# one process).
test:
	@$(MAKE) --no-print-directory -j4 test-python test-host

PYTEST_JOBS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))

# Byte-code caches first, as an installed package has them: the tests start the server in hundreds of
# processes, and where PYTHONDONTWRITEBYTECODE is set each would compile every module again (~0.2 s),
# and every pytest worker would rewrite every test module again (collecting took 6 s, not 1.7 s).
test-python: $(STAMP)
	$(PY) -m compileall -q aspace_dap adapters tests benchmarks examples
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n $(PYTEST_JOBS) --dist worksteal

EXAMPLE_STATE := $(abspath examples/lds_tiles/dumps/gfx90a.O0)

# the .vsix (typecheck, bundle, unit tests, package) and the DebugClient tests against the real server
test-extension: $(STAMP) extension-deps
	$(MAKE) -C vscode-extension test test-integration PYTHON=$(abspath $(PY)) EXAMPLE_STATE=$(EXAMPLE_STATE)

# the extension's npm packages, which need no Python: under make test they install beside the .venv
extension-deps:
	$(MAKE) -C vscode-extension deps

# code-server and playwright-core for the host checks, installed while the extension builds (nothing
# without Chromium: the checks are skipped then)
host-deps:
	$(MAKE) -C vscode-extension host-deps-if-chromium

# The packaged extension in a real VS Code (code-server + Chromium); skipped with a SKIPPED line
# when there is no Chromium, a failure then with REQUIRE_HOST_TESTS=1 (see vscode-extension/Makefile).
# (niced: the Python tests beside them are the longer path, the checks mostly wait on the browser)
test-host: test-extension host-deps
	nice -n 5 $(MAKE) -C vscode-extension host-checks PYTHON=$(abspath $(PY))

# the VS Code extension as vscode-extension/aspace-gpu.vsix (needs node and npm; see the README's "VS Code")
vsix:
	$(MAKE) -C vscode-extension vsix

bench: $(STAMP)
	$(PY) -m compileall -q aspace_dap adapters  # byte-code caches, as an installed package has them
	$(PY) benchmarks/bench_eval.py
	$(PY) benchmarks/bench_state.py
	$(PY) benchmarks/bench_cores.py
	$(PY) benchmarks/bench_index.py
	$(PY) benchmarks/bench_dap.py
	$(PY) benchmarks/bench_lsp.py
	$(PY) benchmarks/bench_scale.py
	$(PY) benchmarks/bench_disasm.py

clean:
	rm -rf $(VENV) build *.egg-info
