"""C's arithmetic in the expression evaluator: integer promotion, the usual arithmetic conversions,
the types of constants, truncating division, IEEE division by zero.

Each value is what gcc computes for the same C expression on x86-64 (LP64, like the GPU ABIs' host
side), `pick` being an int 789 as in the scratch_struct dump's lane 5; each type is the one the C
standard gives the expression.
"""

import os

import pytest

from aspace_dap.errors import EvaluationError
from aspace_dap.expressions import evaluate_expression
from aspace_dap.session import Session
from aspace_dap.values.format import format_obj

DUMP = os.path.join(os.path.dirname(__file__), "..", "examples", "scratch_struct", "dumps", "gfx90a.O0")

AS_GCC_COMPUTES = [
    ('(unsigned long)-1 / 2', '9223372036854775807', 'unsigned long'),
    ('(unsigned long)-1 * (unsigned long)-1', '1', 'unsigned long'),
    ('(unsigned int)-1 / 2', '2147483647', 'unsigned int'),
    ('1u - 2', '4294967295', 'unsigned int'),
    ('-1 < 1u', '0', 'int'),
    ('-1L < 1u', '1', 'int'),
    ('-1 < 1UL', '0', 'int'),
    ('0xffffffff', '4294967295', 'unsigned int'),
    ('0x7fffffff', '2147483647', 'int'),
    ('010', '8', 'int'),
    ('7 % -3', '1', 'int'),
    ('-7 / 2', '-3', 'int'),
    ('-7 % 2', '-1', 'int'),
    ('1UL << 63', '9223372036854775808', 'unsigned long'),
    ('(unsigned long)-1 >> 1', '9223372036854775807', 'unsigned long'),
    ('-1 >> 1', '-1', 'int'),
    ('3000000000', '3000000000', 'long'),
    ('4294967296u', '4294967296', 'unsigned long'),
    ('(short)-1 + (unsigned short)1', '0', 'int'),
    ('-1u', '4294967295', 'unsigned int'),
    ('~0u', '4294967295', 'unsigned int'),
    ('(unsigned long)-1 / 3', '6148914691236517205', 'unsigned long'),
    ('pick + 1u', '790', 'unsigned int'),
    ('1e10', '10000000000', 'double'),
    ('.5', '0.5', 'double'),
    ('2.5f', '2.5', 'float'),
    ('1.0/0', 'inf', 'double'),
    ('-1.0/0', '-inf', 'double'),
    ('(unsigned char)200 + (unsigned char)100', '300', 'int'),
    ('(char)-56 * 2', '-112', 'int'),
    ('2147483647u + 1', '2147483648', 'unsigned int'),
    ('-2147483647 - 1 < 0u', '0', 'int'),
    ('5 / 2.0f', '2.5', 'float'),
]


@pytest.fixture(scope="module")
def frame():
    session = Session.open(DUMP)
    return session, session.frames(session.focus_wave, 5)[0]


@pytest.mark.parametrize("expression, value, type_name", AS_GCC_COMPUTES, ids=[e for e, _, _ in AS_GCC_COMPUTES])
def test_c_arithmetic(frame, expression, value, type_name):
    session, top = frame
    result = evaluate_expression(session, expression, frame=top)
    assert format_obj(result, 0) == value
    assert result.type.display_name() == type_name


@pytest.mark.parametrize("expression, distance", [("&pick - &pick", "0"), ("(&pick + 3) - &pick", "3"),
                                                   ("&pick - (&pick + 2)", "-2"),
                                                   ("(char *)&pick - (char *)(&pick + 1)", "-4")])
def test_pointer_difference_counts_elements(frame, expression, distance):
    session, top = frame
    result = evaluate_expression(session, expression, frame=top)
    assert (format_obj(result, 0), result.type.display_name()) == (distance, "long")


@pytest.mark.parametrize("expression, message", [("1 / 0", "division by zero"), ("pick % 0", "division by zero"),
                                                 ("1.5 % 2", "integer operands"), ("1 << 32", "out of range"),
                                                 ("p * 2", "is not a number"), ("-p", "is not a number")])
def test_what_c_leaves_undefined_is_an_error(frame, expression, message):
    session, top = frame
    with pytest.raises(EvaluationError, match=message):
        evaluate_expression(session, expression, frame=top)


def test_zero_over_zero_is_a_nan(frame):
    session, top = frame
    assert format_obj(evaluate_expression(session, "0.0 / 0.0", frame=top), 0).lstrip("-").startswith("nan")
