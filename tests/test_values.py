"""The value classes ([A1], [§12]): the shared ``__eq__``, ``__hash__`` and ``__repr__``
mean what attrs' own mean — checked against twins made by plain ``@attrs.frozen`` — and a
record (a class deriving from :class:`~aikito_mem.values.Record`) behaves as an ``attrs``
frozen, slotted class does: immutable, slotted, its defaults, ``TypeError`` for a bad call
(worded as attrs words it), :func:`~aikito_mem.values.replace`,
:func:`~aikito_mem.values.fields` and :func:`~aikito_mem.values.asdict`.  Every value is
frozen; only ``Plan`` and ``Operation`` are attrs classes ([A1]).  This
file is type-checked by ``make lint``: the ``type: ignore`` comments below are errors mypy
must see (strict mode reports an unused one), so mypy knows a record's ``__init__`` and
that it is frozen."""

from __future__ import annotations

import copy
import importlib
import pickle
import pkgutil
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import aikito_mem
from aikito_mem.api import PrepareConflict, PreparedProject
from aikito_mem.model import (
    ABSENT,
    Action,
    CheckoutPlan,
    CheckoutState,
    Finding,
    Kind,
    Observed,
    Operation,
    Plan,
    Segment,
    SyncResult,
)
from aikito_mem.values import (
    NOTHING,
    Field,
    Record,
    Value,
    asdict,
    fields,
    is_value_class,
    record,
    replace,
)
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


class Rec(Record):
    """A record twin of :class:`Shared` and :class:`Plain`."""

    a: int
    b: str | None = None
    c: tuple[int, ...] = ()

    @property
    def total(self) -> int:
        return self.a + sum(self.c)


class Bare(Record):
    pass


class Nested(Record):
    inner: Rec = Rec(0)
    kind: Kind = Kind.ABSENT
    names: frozenset[str] = frozenset({"x"})


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
    assert (Rec(*x) == Rec(*y)) is (Plain(*x) == Plain(*y))
    assert (Rec(*x) != Rec(*y)) is (Plain(*x) != Plain(*y))
    if Rec(*x) == Rec(*y):
        assert hash(Rec(*x)) == hash(Rec(*y))
    assert repr(Rec(*x)) == repr(Plain(*x)).replace("Plain(", "Rec(", 1)


def test_other_classes_are_never_equal() -> None:
    assert Shared(1) != Plain(1) and Plain(1) != Shared(1)
    assert Shared(1).__eq__(Plain(1)) is NotImplemented
    assert One(1) == One(1) and One(1) != One(2) and hash(One(1)) == hash(One(1))
    assert Shared(1) != One(1)
    assert len({Shared(1), Shared(1), One(1)}) == 2
    assert Rec(1) != Shared(1) and Rec(1).__eq__(Shared(1)) is NotImplemented
    assert Bare() == Bare() and hash(Bare()) == hash(Bare()) and repr(Bare()) == "Bare()"


def test_fields_that_attrs_would_skip_are_skipped() -> None:
    assert Hidden(1, "x") == Hidden(1, "y") and hash(Hidden(1, "x")) == hash(Hidden(1, "y"))
    assert repr(Hidden(1, "x")) == "Hidden(a=1)"


BAD_CALLS: list[tuple[tuple[object, ...], dict[str, object]]] = [
    ((), {}), ((), {"b": "x"}), ((1, "x", (), 4), {}), ((1,), {"a": 2}), ((1,), {"d": 2}),
    ((1, "x"), {"b": "y"}), ((), {"d": 1, "a": 1}),
]


def test_a_record_takes_its_arguments_as_attrs_would() -> None:
    assert Rec(1) == Rec(1, None, ()) == Rec(a=1) == Rec(1, c=()) == Rec(c=(), a=1)
    assert Rec(1, "x", (2, 3)).total == 6 and Rec(b="y", a=2).b == "y"
    assert (Rec(1, "x").a, Rec(1, "x").b, Rec(1, "x").c) == (1, "x", ())
    for args, kwargs in BAD_CALLS:
        with pytest.raises(TypeError) as ours:
            Rec(*args, **kwargs)  # type: ignore[arg-type]
        with pytest.raises(TypeError) as theirs:
            Plain(*args, **kwargs)  # type: ignore[arg-type]
        assert str(ours.value) == str(theirs.value).replace("Plain.", "Rec."), (args, kwargs)
    with pytest.raises(TypeError, match=r"Bare.__init__\(\) takes 1 positional argument "):
        Bare(1)  # type: ignore[call-arg]


def test_a_bad_call_is_a_type_error_mypy_sees_too() -> None:
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'a'"):
        Rec()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'd'"):
        Rec(1, d=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"takes from 2 to 4 positional arguments but 5"):
        Rec(1, "x", (), 4)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"missing 2 required positional arguments: "
                                        r"'kind' and 'literal'"):
        _Two()  # type: ignore[call-arg]


class _Two(Record):
    kind: Kind
    literal: str


def test_a_record_is_frozen_and_slotted() -> None:
    rec = Rec(1, "x")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        rec.a = 2  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        rec.other = 2  # type: ignore[attr-defined]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        del rec.b
    assert (rec.a, rec.b) == (1, "x")
    assert not hasattr(rec, "__dict__") and not hasattr(Bare(), "__dict__")
    assert vars(Rec)["__slots__"] == ("a", "b", "c")
    assert Rec.__qualname__ == "Rec" and Rec.__doc__ == "A record twin of :class:`Shared` "\
        "and :class:`Plain`."
    assert Rec.__match_args__ == ("a", "b", "c")
    # Class-level defaults are kept as defaults only, never as class attributes.
    assert Nested() == Nested(Rec(0), Kind.ABSENT, frozenset({"x"}))
    assert type(vars(Nested)["kind"]).__name__ == "member_descriptor"


def test_copy_and_pickle_keep_a_record() -> None:
    rec = Nested(Rec(1, "x", (2,)))
    assert copy.copy(rec) == rec and copy.deepcopy(rec) == rec
    assert pickle.loads(pickle.dumps(rec)) == rec


def test_a_mutable_default_or_a_misplaced_field_is_refused() -> None:
    with pytest.raises(TypeError, match=r"the default of 'items', \[\], is not immutable"):
        class Listy(Record):
            items: list[int] = []  # noqa: RUF012

    with pytest.raises(TypeError, match=r"the default of 'items', \(\[\],\), is not immutable"):
        class Deep(Record):
            items: tuple[list[int], ...] = ([],)

    with pytest.raises(TypeError, match=r"the required field 'b' follows a field with a "):
        class Order(Record):
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(TypeError, match=r"Mixed: a record derives from Record only"):
        class Mixed(Record, Exception):  # type: ignore[misc, unused-ignore]
            a: int

    with pytest.raises(TypeError, match=r"Again: a record cannot be subclassed"):
        class Again(Rec):
            d: int = 0

    with pytest.raises(TypeError, match=r"Super: show uses super\(\) or __class__"):
        class Super(Record):
            a: int

            def show(self) -> str:
                return super().__repr__()


class _Probe:
    """Counts the classes built with it in their namespace (``type.__new__`` calls
    ``__set_name__`` once per class it builds)."""

    def __init__(self) -> None:
        self.owners: list[type] = []

    def __set_name__(self, owner: type, name: str) -> None:
        self.owners.append(owner)


def test_a_record_is_built_once_by_its_class_statement() -> None:
    """[§12]: the class statement builds the slotted class itself — no second class
    (``record`` on a ``Value`` subclass builds two, the first one thrown away)."""
    probe = _Probe()

    class Once(Record):
        a: int
        seen = probe

    assert probe.owners == [Once] and vars(Once)["__slots__"] == ("a",)
    twice = _Probe()

    @record
    class Twice(Value):
        a: int
        seen = twice

    assert len(twice.owners) == 2 and twice.owners[-1] is Twice
    assert [f.name for f in fields(Twice)] == ["a"] and Twice(1) == Twice(a=1)


def test_the_record_decorator_makes_the_same_record() -> None:
    """``@record`` on a class declared on ``Value``: the record ``Record`` makes, with the
    same checks (the package declares none this way: it builds the class twice)."""

    @record
    class Decorated(Value):
        """Its doc."""

        a: int
        b: str | None = None

    assert issubclass(Decorated, Record) and Decorated.__qualname__.endswith("Decorated")
    assert Decorated.__doc__ == "Its doc." and vars(Decorated)["__slots__"] == ("a", "b")
    assert Decorated(1) == Decorated(1, None) != Decorated(1, "x")
    assert repr(Decorated(1)).endswith(".Decorated(a=1, b=None)")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        Decorated(1).a = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"the default of 'items', \(\[\],\), is not immutable"):
        @record
        class Deep(Value):
            items: tuple[list[int], ...] = ([],)

    with pytest.raises(TypeError, match=r"a record derives from Value only"):
        @record
        class Plainly:
            a: int

    with pytest.raises(TypeError, match=r"a record cannot be subclassed"):
        @record
        class Again(Rec):
            d: int = 0

    with pytest.raises(TypeError, match=r"show uses super\(\) or __class__"):
        @record
        class Super(Value):
            a: int

            def show(self) -> str:
                return super().__repr__()


def test_no_module_of_the_package_declares_a_record_twice() -> None:
    """[§12]: every record of the package derives from ``Record`` (built once); none is
    the ``@record`` of a ``Value`` subclass (built twice)."""
    root = Path(aikito_mem.__file__).parent
    decorated = [str(path.relative_to(root)) for path in sorted(root.rglob("*.py"))
                 if "\n@record\n" in path.read_text(encoding="utf-8")]
    assert decorated == []


def test_replace_and_fields_work_on_both_kinds() -> None:
    rec = Rec(1, "x")
    assert replace(rec, b=None) == Rec(1) and replace(rec) == rec and rec.b == "x"
    with pytest.raises(TypeError, match=r"Rec has no field 'd'"):
        replace(rec, d=1)
    op = Operation(Action.NOOP, "INV-MEM-10", "/co", "/co/.agents/memory/a", "in sync")
    assert replace(op, reason="x") == attrs.evolve(op, reason="x")
    assert all(isinstance(f, Field) for f in fields(Rec))
    assert [(f.name, f.default) for f in fields(Rec)] == [("a", NOTHING), ("b", None),
                                                          ("c", ())]
    assert [f.name for f in fields(Operation)] == [a.name for a in attrs.fields(Operation)]
    assert fields(Bare) == ()
    assert is_value_class(Rec) and is_value_class(Plan) and not is_value_class(Value)
    assert not is_value_class(Plain(1)) and not is_value_class(int)
    assert not is_value_class(Record)


def test_asdict_gives_the_fields_of_either_kind_by_name() -> None:
    assert asdict(Rec(1, "x")) == {"a": 1, "b": "x", "c": ()}
    assert list(asdict(Nested())) == ["inner", "kind", "names"]
    assert asdict(Nested())["inner"] is Nested().inner  # its own values, not converted
    finding = Finding("config.x", "warning", "a message")
    assert asdict(finding) == {"code": "config.x", "severity": "warning",
                               "message": "a message", "path": None}
    op = Operation(Action.NOOP, "INV-MEM-10", "/co", "/co/.agents/memory/a", "in sync")
    assert asdict(op) == {a.name: getattr(op, a.name) for a in attrs.fields(Operation)}


def test_model_values_keep_their_api() -> None:
    link = Observed(Kind.LINK, "/ws/memory/a")
    assert link == Observed(Kind.LINK, "/ws/memory/a") != ABSENT
    assert repr(link) == ("Observed(kind=<Kind.LINK: 'symlink'>, literal='/ws/memory/a', "
                          "dev=0, ino=0, gen=None)")
    assert replace(link, literal="x").literal == "x"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        link.literal = "x"  # type: ignore[misc]
    op = Operation(Action.NOOP, "INV-MEM-10", "/co", "/co/.agents/memory/a", "in sync")
    assert {op, attrs.evolve(op)} == {op}
    assert SkillsView() == SkillsView() and not hasattr(SkillsView(), "__dict__")
    assert attrs.has(Plan) and [f.name for f in attrs.fields(Plan)][:2] == ["project",
                                                                            "workspace"]
    # Every value is frozen; only the plan and its operations are attrs classes ([A1]).
    # The checkout plans (not operations), the findings and the results are records
    # ([§12]).
    for cls in (Plan, Operation):
        assert attrs.has(cls), cls
    for made in (CheckoutPlan, Finding, Segment, SyncResult, PreparedProject):
        assert not attrs.has(made) and issubclass(made, Record) and is_value_class(made), made
        assert "__slots__" in vars(made) and "__setattr__" not in vars(made), made
    assert replace(Segment("memory", True), outcome="applied").outcome == "applied"
    assert CheckoutPlan("a", "/co", CheckoutState.ACTIVE).dirs == ()
    planned = CheckoutPlan("a", "/co", CheckoutState.ACTIVE, dirs=(("", ABSENT),))
    assert replace(planned, dirs=()) == CheckoutPlan("a", "/co", CheckoutState.ACTIVE)


def _value_classes() -> list[type]:
    found: list[type] = []
    for info in pkgutil.walk_packages(aikito_mem.__path__, "aikito_mem."):
        if info.name == "aikito_mem.__main__":  # runs the command line
            continue
        module = importlib.import_module(info.name)
        found += [obj for obj in vars(module).values()
                  if is_value_class(obj) and obj.__module__ == info.name]
    return found


def test_every_value_class_is_frozen_and_slotted() -> None:
    classes = _value_classes()
    assert len(classes) > 30
    records = [cls for cls in classes if not attrs.has(cls)]
    assert len(records) >= 20
    for cls in classes:
        assert "__slots__" in vars(cls), cls
        if attrs.has(cls):
            assert vars(cls)["__setattr__"] is not object.__setattr__, cls  # frozen
        else:  # frozen by Record's own __setattr__
            assert issubclass(cls, Record) and "__setattr__" not in vars(cls), cls
    assert vars(Record)["__setattr__"] is not object.__setattr__



def test_a_record_can_be_referred_to_weakly_as_an_attrs_class_can() -> None:
    """The values that were attrs classes (``Finding``, ``SyncResult``…) kept their
    ``__weakref__`` slot when they became records; still no ``__dict__``."""
    import weakref

    from aikito_mem.model import Finding

    finding = Finding("x.y", "warning", "m")
    assert weakref.ref(finding)() is finding
    assert not hasattr(finding, "__dict__")

# -- an adversary's review ------------------------------------------------------------------


def test_a_record_and_its_attrs_twin_are_never_equal_nor_collide_in_a_set() -> None:
    """The same field values in a record and in an attrs class (either kind of attrs
    class): two distinct values, as two attrs classes are."""
    rec, shared, plain = Rec(1, "x", (2,)), Shared(1, "x", (2,)), Plain(1, "x", (2,))
    assert rec != shared and shared != rec and rec != plain and plain != rec
    assert len({rec, shared, plain, Rec(1, "x", (2,))}) == 3
    assert (rec == shared) is False and rec.__eq__(plain) is NotImplemented


def test_a_record_cannot_be_subclassed() -> None:
    """A subclass of a record has no fields of its own to compare: its ``==``, hash and
    repr raised ``NotAnAttrsClassError`` — so declaring one is refused, by name."""
    with pytest.raises(TypeError, match="Rec2: a record cannot be subclassed"):
        type("Rec2", (Rec,), {})
    with pytest.raises(TypeError, match="a record cannot be subclassed"):
        attrs.frozen(type("Both", (Observed,), {"__annotations__": {}}))


def test_a_record_class_built_past_its_metaclass_is_refused() -> None:
    """``type.__new__`` builds a class without calling the metaclass's ``__new__``, but it
    always calls ``__init_subclass__``: neither a subclass of a record nor a "record"
    that the metaclass never saw (no fields, no checks of its defaults) is made."""
    meta = type(Rec)
    for bases in ((Rec,), (Observed,), (Finding,)):
        with pytest.raises(TypeError, match="a record cannot be subclassed"):
            type.__new__(meta, "Sneaky", bases, {"__slots__": ()})
    with pytest.raises(TypeError, match="record Unchecked: built past Record's metaclass"):
        type.__new__(meta, "Unchecked", (Record,),
                     {"__annotations__": {"a": "list[int]"}, "a": []})


def test_replace_of_an_unknown_field_changes_nothing_on_both_kinds() -> None:
    rec, op = Rec(1), Operation(Action.NOOP, "G1", "/co", "/co/x", "already linked")
    with pytest.raises(TypeError, match="has no field 'd'"):
        replace(rec, a=2, d=3)
    with pytest.raises(TypeError):
        replace(op, nope=1)
    assert rec == Rec(1) and replace(rec) == rec and replace(rec) is not rec


def test_a_whole_plan_pickles_and_copies_to_an_equal_plan(tmp_path: Path) -> None:
    """A plan of real operations, each holding record values (``Observed``), and the
    records of a view: pickled, copied and deep-copied, equal and equally hashed."""
    from tests.helpers.workspace import WS

    ws = WS(tmp_path)
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    runtime = Path(co, ".agents/memory")
    runtime.mkdir(parents=True)
    Path(runtime, "b.md").write_text("mine\n")
    ws.write_config("demo", memory=["a.md", "b.md"], paths=[co])
    ws.add_file("b.md", "b")
    plan = ws.project("demo").plan()
    assert {op.action for op in plan.operations} == {Action.CREATE, Action.CONFLICT}
    for twin in (pickle.loads(pickle.dumps(plan)), copy.copy(plan), copy.deepcopy(plan)):
        assert twin == plan and hash(twin.operations) == hash(plan.operations)
    view = SkillsView(Observed(Kind.DIR), (("x", ABSENT),))
    assert pickle.loads(pickle.dumps(view)) == view


def test_the_api_names_prepare_conflict_to_the_type_checker_too() -> None:
    """``aikito_mem.api.PrepareConflict`` is prepare's record, reached lazily at run time
    ([A3], [§12]) — and the same class to mypy, which checks its calls (the ``type:
    ignore`` below is an error mypy must see) and takes it as an annotation."""
    from aikito_mem.prepare import PrepareConflict as Declared

    conflict: PrepareConflict = PrepareConflict("/co/x", "found a file")
    assert PrepareConflict is Declared and conflict.segment == "memory"
    with pytest.raises(TypeError):
        PrepareConflict()  # type: ignore[call-arg]
