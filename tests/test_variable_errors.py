"""One variable that cannot be read (malformed DWARF for it, a dump that contradicts it) shows
`<unavailable: why>` beside the frame's other variables, in the debugger and in `inspect`;
a request's evaluation budget still fails the whole answer."""

import os

import pytest

from aspace_dap.dap import variables
from aspace_dap.errors import CodeObjectError, LimitExceeded
from aspace_dap.inspect import frame_report
from aspace_dap.session import Session

DUMP = os.path.join(os.path.dirname(__file__), "..", "examples", "scratch_struct", "dumps", "gfx90a.O0")


@pytest.fixture(scope="module")
def session():
    return Session.open(DUMP)


def _break_one(monkeypatch, session, name, error):
    real = Session.read_variable

    def read_variable(self, frame, var, *args, **kwargs):
        if var.name == name:
            raise error
        return real(self, frame, var, *args, **kwargs)
    monkeypatch.setattr(Session, "read_variable", read_variable)


def test_inspect_keeps_the_other_variables(monkeypatch, session):
    before = {v["name"]: v["value"] for v in frame_report(session, session.focus_wave, 5)["frames"][0]["variables"]}
    assert before["pick"] == "789"
    _break_one(monkeypatch, session, "pick", CodeObjectError("DW_AT_location of pick: truncated expression"))
    after = {v["name"]: v["value"] for v in frame_report(session, session.focus_wave, 5)["frames"][0]["variables"]}
    assert after["pick"] == "<unavailable: DW_AT_location of pick: truncated expression>"
    assert {k: v for k, v in after.items() if k != "pick"} == {k: v for k, v in before.items() if k != "pick"}


def test_a_budget_overrun_is_not_hidden_per_variable(monkeypatch, session):
    _break_one(monkeypatch, session, "pick", LimitExceeded("evaluation took over 10 s"))
    with pytest.raises(LimitExceeded):
        frame_report(session, session.focus_wave, 5)


def test_scope_variable_answers_for_the_one_that_fails(monkeypatch, session):
    frame = session.frames(session.focus_wave, 5)[0]
    pick = next(v for v in session.variables(frame) if v.name == "pick")
    _break_one(monkeypatch, session, "pick", CodeObjectError("bad location list"))
    row = variables._scope_variable(None, session, frame, pick, False)
    assert row == {"name": "pick", "value": "<unavailable: bad location list>", "type": "int", "variablesReference": 0}
    _break_one(monkeypatch, session, "pick", LimitExceeded("over budget"))
    with pytest.raises(LimitExceeded):
        variables._scope_variable(None, session, frame, pick, False)
