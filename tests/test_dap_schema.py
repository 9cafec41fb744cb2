"""The DAP schema check every test client applies to what the server sends (dap_schema.py)."""

import pytest

from dap_schema import SchemaViolation, validate_message

VARIABLES = {"seq": 5, "type": "response", "request_seq": 4, "success": True, "command": "variables",
             "body": {"variables": [{"name": "tx", "value": "3", "type": "int", "variablesReference": 0}]}}


def test_a_valid_response_passes():
    validate_message(VARIABLES)


def test_a_wrong_field_is_named_with_its_path():
    bad = {**VARIABLES, "body": {"variables": [{**VARIABLES["body"]["variables"][0], "variablesReference": "x"}]}}
    with pytest.raises(SchemaViolation, match=r"VariablesResponse violated .*body/variables/0/variablesReference: "
                                              r"'x' is not of type 'integer'"):
        validate_message(bad)


def test_a_missing_required_field_fails():
    with pytest.raises(SchemaViolation, match="'threadId' is a required property"):
        validate_message({"seq": 1, "type": "request", "command": "stackTrace", "arguments": {}})


def test_nested_exception_details_are_checked_at_every_depth():
    def info(inner):
        return {"seq": 9, "type": "response", "request_seq": 8, "success": True, "command": "exceptionInfo",
                "body": {"exceptionId": "e", "breakMode": "always",
                         "details": {"message": "outer", "innerException": [inner]}}}
    validate_message(info({"message": "inner", "innerException": [{"typeName": "t"}]}))
    with pytest.raises(SchemaViolation, match="innerException/0/innerException/0/typeName"):
        validate_message(info({"message": "inner", "innerException": [{"typeName": 7}]}))


def test_a_message_of_no_known_type_fails():
    with pytest.raises(SchemaViolation, match="not request/response/event"):
        validate_message({"seq": 1, "type": "notification"})
