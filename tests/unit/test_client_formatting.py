"""kcat-style record templates."""
import pytest

from kcore.client.formatting import RecordFormatter, format_headers
from kcore.protocol.records import Record

RECORD = Record(offset=42, timestamp=1700000000123, key=b"k1", value=b"hello",
                headers=[("h1", b"v1"), ("h2", None)])
NULLS = Record(offset=0, timestamp=5, key=None, value=None, headers=[])


def test_default_template_prints_the_value_on_its_own_line():
    assert RecordFormatter().format("t", 0, RECORD) == b"hello\n"


def test_every_placeholder_is_replaced():
    template = "%t|%p|%o|%T|%k|%K|%s|%S|%h\\n"
    assert RecordFormatter(template).format("orders", 3, RECORD) == (
        b"orders|3|42|1700000000123|k1|2|hello|5|h1=v1,h2=\n")


def test_null_key_and_value_print_empty_with_length_minus_one():
    assert RecordFormatter("[%k][%K][%s][%S]").format("t", 0, NULLS) == b"[][-1][][-1]"


def test_escapes_and_literal_percent():
    assert RecordFormatter("%%\\t\\x41\\\\\\r\\n").format("t", 0, NULLS) == b"%\tA\\\r\n"


def test_no_newline_is_added_without_one_in_the_template():
    assert RecordFormatter("%o,").format("t", 0, RECORD) == b"42,"


def test_binary_values_pass_through_unchanged():
    record = Record(offset=1, timestamp=1, key=b"\x00\xff", value=b"\x80\n\x00")
    assert RecordFormatter("%k:%s").format("t", 0, record) == b"\x00\xff:\x80\n\x00"


def test_non_ascii_template_text_is_utf8():
    assert RecordFormatter("é %s").format("t", 0, RECORD) == "é hello".encode()


@pytest.mark.parametrize("template", ["%q", "abc%", "\\q", "\\x4", "\\xZZ", "\\"])
def test_bad_templates_are_rejected_up_front(template):
    with pytest.raises(ValueError):
        RecordFormatter(template)


def test_headers_keep_their_order_and_duplicates():
    assert format_headers([("a", b"1"), ("b", b"2"), ("a", b"3")]) == b"a=1,b=2,a=3"
