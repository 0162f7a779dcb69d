"""A tagged union of records reports its errors as the keys of the file, under any prefix and at any depth."""

from typing import Literal

import pytest

from pdrepro.core.strictmodel import Record, SchemaError, load, tagged_union


class Cat(Record):
    kind: Literal["cat"]
    lives: int


class Dog(Record):
    kind: Literal["dog"]
    bark: str = "woof"


Pet = tagged_union("kind", Cat, Dog, title="Pet", description="a cat or a dog")


class Home(Record):
    pets: tuple[Pet, ...]


def _error(cls, data, where="") -> str:
    with pytest.raises(SchemaError) as info:
        load(cls, data, "f.yaml", where)
    return str(info.value)


def test_each_member_is_chosen_by_its_tag():
    assert isinstance(load(Pet, {"kind": "dog"}, "f.yaml"), Dog)
    assert load(Home, {"pets": [{"kind": "cat", "lives": 9}]}, "f.yaml").pets[0] == Cat(kind="cat", lives=9)


def test_a_bad_or_missing_tag_reads_as_a_key():
    assert _error(Pet, {"kind": "cow"}) == "f.yaml: kind: 'cow' is not one of cat, dog"
    assert _error(Pet, {"lives": 1}, "pet").startswith("f.yaml: missing key pet.kind; add it")
    assert _error(Home, {"pets": [{"kind": "dog"}, {"kind": 3}]}) == "f.yaml: pets[1].kind: 3 is not one of cat, dog"


def test_the_tag_is_no_step_of_the_path():
    assert _error(Home, {"pets": [{"kind": "cat", "lives": "nine"}]}) == "f.yaml: pets[0].lives: expected an integer, got 'nine'"
    assert _error(Pet, {"kind": "dog", "fur": 1}) == "f.yaml: unknown key fur; allowed here: bark, kind"
