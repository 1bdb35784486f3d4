"""The shared ``__eq__``, ``__hash__`` and ``__repr__`` of the value classes mean what
attrs' own mean ([A1], [§12]): checked against twins made by plain ``@attrs.frozen``, and on
every value class of the package (still attrs frozen, slotted classes)."""

from __future__ import annotations

import importlib
import pkgutil

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import aikito_mem
from aikito_mem.model import (
    ABSENT,
    Action,
    Kind,
    Observed,
    Operation,
    Plan,
)
from aikito_mem.values import Value
from aikito_mem.views import SkillsView


@attrs.frozen(repr=False, eq=False)
class Shared(Value):
    a: int
    b: str | None = None
    c: tuple[int, ...] = ()


@attrs.frozen
class Plain:
    a: int
    b: str | None = None
    c: tuple[int, ...] = ()


@attrs.frozen(repr=False, eq=False)
class One(Value):
    a: int


@attrs.frozen(repr=False, eq=False)
class Hidden(Value):
    a: int
    note: str = attrs.field(default="", eq=False, repr=False)


values = st.tuples(st.integers(), st.none() | st.text(max_size=5),
                   st.lists(st.integers(), max_size=3).map(tuple))


@given(values, values)
def test_equality_and_hash_are_attrs_own(x: tuple[int, str | None, tuple[int, ...]],
                                         y: tuple[int, str | None, tuple[int, ...]]) -> None:
    assert (Shared(*x) == Shared(*y)) is (Plain(*x) == Plain(*y))
    assert (Shared(*x) != Shared(*y)) is (Plain(*x) != Plain(*y))
    if Shared(*x) == Shared(*y):
        assert hash(Shared(*x)) == hash(Shared(*y))
    assert repr(Shared(*x)) == repr(Plain(*x)).replace("Plain(", "Shared(", 1)


def test_other_classes_are_never_equal() -> None:
    assert Shared(1) != Plain(1) and Plain(1) != Shared(1)
    assert Shared(1).__eq__(Plain(1)) is NotImplemented
    assert One(1) == One(1) and One(1) != One(2) and hash(One(1)) == hash(One(1))
    assert Shared(1) != One(1)
    assert len({Shared(1), Shared(1), One(1)}) == 2


def test_fields_that_attrs_would_skip_are_skipped() -> None:
    assert Hidden(1, "x") == Hidden(1, "y") and hash(Hidden(1, "x")) == hash(Hidden(1, "y"))
    assert repr(Hidden(1, "x")) == "Hidden(a=1)"


def test_model_values_keep_the_attrs_api() -> None:
    link = Observed(Kind.LINK, "/ws/memory/a")
    assert link == Observed(Kind.LINK, "/ws/memory/a") != ABSENT
    assert repr(link) == ("Observed(kind=<Kind.LINK: 'symlink'>, literal='/ws/memory/a', "
                          "dev=0, ino=0, gen=None)")
    assert attrs.evolve(link, literal="x").literal == "x"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        link.literal = "x"  # type: ignore[misc]
    op = Operation(Action.NOOP, "INV-MEM-10", "/co", "/co/.agents/memory/a", "in sync")
    assert {op, attrs.evolve(op)} == {op}
    assert SkillsView() == SkillsView() and not hasattr(SkillsView(), "__dict__")
    assert attrs.has(Plan) and [f.name for f in attrs.fields(Plan)][:2] == ["project",
                                                                            "workspace"]


def _value_classes() -> list[type]:
    found: list[type] = []
    for info in pkgutil.walk_packages(aikito_mem.__path__, "aikito_mem."):
        if info.name == "aikito_mem.__main__":  # runs the command line
            continue
        module = importlib.import_module(info.name)
        found += [obj for obj in vars(module).values()
                  if isinstance(obj, type) and attrs.has(obj)
                  and obj.__module__ == info.name]
    return found


def test_every_value_class_is_a_frozen_slotted_attrs_class() -> None:
    classes = _value_classes()
    assert len(classes) > 30
    for cls in classes:
        assert "__slots__" in vars(cls), cls
        assert cls.__setattr__ is not object.__setattr__, cls  # frozen
