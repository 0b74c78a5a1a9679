"""Serializations S1..S5 and hashes (identities.md §1)."""

import pytest

from turn_hooks import canonical

VALUE = {"b": "é", "a": [1, 2.0]}


@pytest.mark.parametrize(
    ("serialize", "expected"),
    [
        pytest.param(canonical.s1, '{"a":[1,2.0],"b":"é"}', id="S1-canonical"),
        pytest.param(canonical.s2, '{"a": [1, 2.0], "b": "é"}', id="S2-default-sep-utf8"),
        pytest.param(canonical.s3, '{"a": [1, 2.0], "b": "\\u00e9"}', id="S3-default-sep-ascii"),
        pytest.param(canonical.s5, '{"a":[1,2.0],"b":"\\u00e9"}', id="S5-compact-ascii"),
    ],
)
def test_serializations_differ_exactly_where_the_spec_says(serialize, expected):
    assert serialize(VALUE) == expected


def test_s4_keeps_array_order_like_json_stringify():
    assert canonical.s4(["b", "a", True, None, "目标"]) == '["b","a",true,null,"目标"]'


def test_compact_json_keeps_insertion_order():
    assert canonical.compact_json({"z": 1, "a": "é"}) == '{"z":1,"a":"é"}'


def test_hashes():
    assert canonical.sha256_hex("") == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert canonical.hex_n("", 12) == "e3b0c44298fc"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({"n": 1.0}, '{"n":1}', id="integral-float-prints-as-int"),
        pytest.param({"n": 1.5}, '{"n":1.5}', id="fraction-kept"),
        pytest.param([float("nan"), float("inf")], "[null,null]", id="non-finite-is-null"),
        pytest.param({"n": 1e22}, '{"n":1e+22}', id="huge-stays-exponent"),
        pytest.param(
            {"b": True, "x": None, "t": ("a", 2.0)},
            '{"b":true,"t":["a",2],"x":null}',
            id="bool-none-tuple",
        ),
    ],
)
def test_s1_js_prints_numbers_as_javascript(value, expected):
    assert canonical.s1_js(value) == expected


def test_js_normalise_keeps_strings_ints_and_their_subclasses_as_they_are():
    # Plain str and int take a fast path; a subclass (an enum member, say) must come
    # out unchanged too, by the general one.
    import enum

    from turn_hooks.canonical import js_normalise

    class Level(enum.IntEnum):
        HIGH = 3

    class Name(str):
        pass

    document = {"n": 7, "s": "x", "level": Level.HIGH, "name": Name("y"), "f": 2.0}
    normal = js_normalise(document)
    assert normal == {"n": 7, "s": "x", "level": 3, "name": "y", "f": 2}
    assert normal["level"] is Level.HIGH and normal["name"] is document["name"]
    assert type(normal["f"]) is int
