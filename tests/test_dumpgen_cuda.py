"""Regenerating the CUDA example dumps never loses a committed dump: a missing nvdisasm or a failing
build leaves every dump folder as it was."""

from __future__ import annotations

import os
import sys

import pytest

from dap_client import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "examples"))
from dumpgen import cuda_engine, cuda_examples  # noqa: E402


@pytest.fixture
def cuda_copy(tmp_path, monkeypatch):
    """A stand-in for examples/cuda: one committed-looking dump per spec, each holding a marker file."""
    dumps = tmp_path / "cuda" / "dumps"
    for spec in cuda_examples.specs():
        (dumps / spec.name).mkdir(parents=True)
        (dumps / spec.name / "manifest.json").write_text("committed")
    monkeypatch.setattr(cuda_examples, "CUDA", tmp_path / "cuda")
    return dumps


def _untouched(dumps) -> bool:
    names = sorted(p.name for p in dumps.iterdir())
    return (names == sorted(spec.name for spec in cuda_examples.specs())
            and all((dumps / n / "manifest.json").read_text() == "committed" for n in names))


def test_missing_nvdisasm_is_a_clear_error_and_deletes_nothing(cuda_copy, monkeypatch, capsys):
    def no_nvdisasm():
        raise FileNotFoundError("nvdisasm not found: install the nvidia-cuda-nvdisasm wheel or the CUDA toolkit")

    monkeypatch.setattr(cuda_engine, "nvdisasm", no_nvdisasm)
    assert cuda_examples.main() == 1
    assert "nvdisasm not found" in capsys.readouterr().err
    assert _untouched(cuda_copy)


def test_a_failing_build_keeps_the_committed_dump(cuda_copy, monkeypatch):
    monkeypatch.setattr(cuda_engine, "nvdisasm", lambda: "/bin/true")

    def half_build(spec, dest):
        dest.mkdir()
        (dest / "manifest.json").write_text("half written")
        raise RuntimeError("nvdisasm crashed")

    monkeypatch.setattr(cuda_engine, "build", half_build)
    with pytest.raises(RuntimeError):
        cuda_examples.main()
    assert _untouched(cuda_copy)  # no half dump swapped in, no temporary folder left behind
