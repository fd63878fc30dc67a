"""The shared error helpers of rfbench.errors."""

import pytest

from rfbench.errors import FormatError, ValidationError, malformed_as_format_error


@pytest.mark.parametrize("exc", [TypeError("unsupported operand type(s) for -: 'str' and 'float'"),
                                 KeyError("results"), IndexError("list index out of range"),
                                 AttributeError("'list' object has no attribute 'get'"), ValueError("bad\n  value")])
def test_a_malformed_field_is_one_format_error_line(exc):
    with pytest.raises(FormatError) as info:
        with malformed_as_format_error("r.json: malformed"):
            raise exc
    text = str(info.value)
    assert text.startswith(f"r.json: malformed ({type(exc).__name__}: ")
    assert "\n" not in text
    assert info.value.__suppress_context__


def test_the_message_is_cut_to_the_limit():
    with pytest.raises(FormatError) as info:
        with malformed_as_format_error("x", limit=10):
            raise TypeError("a" * 500)
    assert str(info.value) == "x (TypeError: " + "a" * 10 + ")"


def test_rfbench_errors_and_others_pass_unchanged():
    with pytest.raises(ValidationError, match="^mine$"):  # also a ValueError: kept as it is
        with malformed_as_format_error("x"):
            raise ValidationError("mine")
    with pytest.raises(ZeroDivisionError):
        with malformed_as_format_error("x"):
            raise ZeroDivisionError("not a document error")
