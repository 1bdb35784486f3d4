"""The package's enums ([§12]): each is declared on :class:`~aikito_mem.values.Words` or
:class:`~aikito_mem.values.StrWords` and built by CPython's simple enum builder, yet is the
class an ordinary ``enum.Enum`` / ``enum.StrEnum`` class statement builds — compared here,
enum by enum, with a twin built the ordinary way from the same members.  What the simple
builder would build otherwise (or not at all) is refused at class creation; without the
builder (a future Python) the ordinary path builds the same class."""

from __future__ import annotations

import ast
import copy
import enum
import importlib
import pickle
import pkgutil
import sys
from pathlib import Path
from typing import Any

import pytest

import aikito_mem
from aikito_mem import values
from aikito_mem.errors import Outcome
from aikito_mem.model import CheckoutState, Kind, Severity
from aikito_mem.values import PlanKind, StrWords, Words

ROOT = Path(aikito_mem.__file__).parent


def _package_enums() -> list[type[enum.Enum]]:
    found: dict[str, type[enum.Enum]] = {}
    for info in pkgutil.walk_packages([str(ROOT)], "aikito_mem."):
        if info.name == "aikito_mem.__main__":  # running it is the command line
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (isinstance(obj, enum.EnumType) and obj.__module__ == info.name
                    and obj is not enum.Enum):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[key] for key in sorted(found)]


ENUMS = _package_enums()


def _base(cls: type[enum.Enum]) -> type[enum.Enum]:
    return enum.StrEnum if issubclass(cls, enum.StrEnum) else enum.Enum


def _written_docstring(cls: type) -> str | None:
    """The docstring of ``cls``'s class statement, read from its source."""
    tree = ast.parse(Path(sys.modules[cls.__module__].__file__ or "").read_text("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            return ast.get_docstring(node, clean=False)
    raise AssertionError(f"no class statement of {cls.__qualname__}")


def _twin(cls: type[enum.Enum]) -> Any:
    """``cls`` built again by an ordinary class statement's machinery, from its own
    members and its docstring where one was written, module and qualified name."""
    base = _base(cls)
    meta: Any = type(base)
    classdict = meta.__prepare__(cls.__name__, (base,))
    classdict["__module__"] = cls.__module__
    classdict["__qualname__"] = cls.__qualname__
    if _written_docstring(cls) is not None:  # as compiled (3.13 dedents it)
        classdict["__doc__"] = cls.__doc__
    for key in ("__firstlineno__", "__static_attributes__"):  # 3.13's compiler puts them
        if key in vars(cls):
            classdict[key] = vars(cls)[key]
    for member in cls:
        classdict[member.name] = member.value
    return meta(cls.__name__, (base,), classdict)


def _same_class(cls: Any, twin: Any) -> None:
    assert type(cls) is type(twin) is enum.EnumType
    assert [c.__name__ for c in cls.__mro__] == [c.__name__ for c in twin.__mro__]
    assert [(m.name, m.value) for m in cls] == [(m.name, m.value) for m in twin]
    assert list(cls.__members__) == list(twin.__members__) == cls._member_names_
    assert sorted(cls.__dict__) == sorted(twin.__dict__)
    assert cls.__doc__ == twin.__doc__
    assert cls.__qualname__ == twin.__qualname__ and cls.__module__ == twin.__module__
    for member, other in zip(cls, twin, strict=True):
        # Each member is an attribute of its class, as the class statement leaves it
        # (the simple builder leaves a redirecting property).
        assert cls.__dict__[member.name] is member
        assert type(twin.__dict__[other.name]) is twin
        assert cls(member.value) is member and cls[member.name] is member
        assert getattr(cls, member.name) is member
        assert cls._value2member_map_[member.value] is member
        assert member._sort_order_ == other._sort_order_
        assert repr(member) == repr(other)
        assert str(member) == str(other)
        assert format(member) == format(other) and f"{member:>20}" == f"{other:>20}"
        assert hash(member) == hash(other)
        assert isinstance(member, str) is isinstance(other, str)
        if isinstance(member, str):
            assert member == member.value and hash(member) == hash(member.value)
    with pytest.raises(ValueError):
        cls("no such word")
    first = next(iter(cls))
    with pytest.raises(AttributeError, match="cannot reassign member"):
        setattr(cls, first.name, "x")


def test_the_package_has_its_enums() -> None:
    names = {f"{e.__module__}.{e.__qualname__}" for e in ENUMS}
    assert {"aikito_mem.model.Kind", "aikito_mem.errors.Outcome",
            "aikito_mem.values.PlanKind", "aikito_mem.commands.hook.HookOutcome"} <= names
    assert len(ENUMS) >= 23


@pytest.mark.parametrize("cls", ENUMS, ids=lambda e: f"{e.__module__}.{e.__qualname__}")
def test_each_enum_is_the_class_an_ordinary_statement_builds(cls: Any) -> None:
    _same_class(cls, _twin(cls))
    for member in cls:
        assert pickle.loads(pickle.dumps(member)) is member
        assert copy.copy(member) is member and copy.deepcopy(member) is member
        assert isinstance(member, Words)
        assert isinstance(member, StrWords) is isinstance(member, enum.StrEnum)


def test_every_enum_of_the_package_is_declared_on_words() -> None:
    """[§12]: one way to write an enum — no class statement of the package derives from
    ``enum`` directly (it would be built by the slow machinery)."""
    direct = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    if ast.unparse(base) in ("enum.Enum", "enum.StrEnum", "Enum", "StrEnum",
                                             "enum.IntEnum", "enum.Flag", "enum.IntFlag"):
                        direct.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert direct == []


def test_the_simple_builder_is_taken_on_this_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is not silently lost: the builder is the standard library's, and an
    enum declared on ``Words`` or ``StrWords`` goes through it."""
    assert values._SIMPLE_ENUM is enum._simple_enum  # type: ignore[attr-defined]
    calls: list[type] = []

    def spy(etype: type) -> Any:
        calls.append(etype)
        return enum._simple_enum(etype)  # type: ignore[attr-defined]

    monkeypatch.setattr(values, "_SIMPLE_ENUM", spy)

    class Colour(Words):
        RED = "red"

    class Word(StrWords):
        YES = "yes"

    assert calls == [enum.Enum, enum.StrEnum]
    assert type(Colour) is type(Word) is enum.EnumType


def _declare(base: type) -> tuple[Any, Any]:
    """Two enums declared on ``base``: Words/StrWords, or enum.Enum/StrEnum for the twin."""
    class Light(base):  # type: ignore[valid-type,misc]
        """A light."""

        RED = "red"
        AMBER = "amber"
        GREEN = "green"

        def stop(self) -> bool:
            return self is not type(self).GREEN

        @property
        def lit(self) -> str:
            return f"{self.value} light"

        def __str__(self) -> str:  # a dunder method, and super()'s cell
            return f"<{super().__str__()}>"

    class Bare(base):  # type: ignore[valid-type,misc]
        ONLY = "only"

    return Light, Bare


@pytest.mark.parametrize("simple", [True, False], ids=["simple builder", "fallback"])
@pytest.mark.parametrize(("base", "etype"), [(Words, enum.Enum), (StrWords, enum.StrEnum)])
def test_methods_properties_and_docstrings_are_kept_on_either_path(
        monkeypatch: pytest.MonkeyPatch, simple: bool, base: type, etype: type) -> None:
    if not simple:  # a Python without the builder: the ordinary class statement's path
        monkeypatch.setattr(values, "_SIMPLE_ENUM", None)
    light, bare = _declare(base)
    twin_light, twin_bare = _declare(etype)  # the same statement on the ordinary base
    for cls, twin in ((light, twin_light), (bare, twin_bare)):
        assert sorted(cls.__dict__) == sorted(twin.__dict__)
        assert cls.__doc__ == twin.__doc__
        assert [(m.name, m.value) for m in cls] == [(m.name, m.value) for m in twin]
        assert type(cls) is enum.EnumType and cls.__mro__[1:] == twin.__mro__[1:]
        for member in cls:
            assert cls.__dict__[member.name] is member
            assert repr(member).replace("Light", "X").replace("Bare", "X") == \
                repr(twin(member.value)).replace("Light", "X").replace("Bare", "X")
    assert light.RED.stop() and not light.GREEN.stop()
    assert str(light.RED) == str(twin_light.RED) in ("<Light.RED>", "<red>")
    assert light.AMBER.lit == "amber light"
    assert light.__doc__ == "A light." and bare.__doc__ is None


def test_the_fallback_refuses_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(values, "_SIMPLE_ENUM", None)
    with pytest.raises(TypeError, match="repeats the value"):
        class Twice(Words):
            A = "a"
            B = "a"


REFUSED = {
    "a sunder name": ("_order_ = 'A B'\n    A = 'a'\n    B = 'b'", "sunder or private"),
    "an ignored name": ("_ignore_ = ['X']\n    A = 'a'", "sunder or private"),
    "a next value": ("_generate_next_value_ = staticmethod(lambda *a: 'x')",
                     "sunder or private"),
    "a private name": ("__secret = 'x'\n    A = 'a'", "sunder or private"),
    "a one-underscore name": ("_a = 'x'", "sunder or private"),
    "a __new__": ("A = 'a'\n    def __new__(cls, value):\n        return object.__new__(cls)",
                  "nor __new__"),
    "auto()": ("A = enum.auto()", "is not a str"),
    "a number": ("A = 1", "is not a str"),
    "a tuple": ("A = ('a', 'b')", "is not a str"),
    "a nested class": ("class A:\n        pass", "is not a str"),
    "an alias": ("A = 'a'\n    B = 'a'", "repeats the value 'a'"),
    "a member called name": ("name = 'a'", "named like an attribute of Enum"),
    "a member called value": ("value = 'v'", "named like an attribute of Enum"),
}


@pytest.mark.parametrize("body", REFUSED.values(), ids=list(REFUSED))
def test_what_the_simple_builder_would_get_wrong_is_refused(body: tuple[str, str]) -> None:
    source, words = body
    with pytest.raises(TypeError, match=words):
        exec(f"class Bad(Words):\n    {source}\n", {"Words": Words, "enum": enum})


def test_a_str_enum_member_named_like_a_str_method_is_refused() -> None:
    with pytest.raises(TypeError, match="named like an attribute of StrEnum"):
        class Bad(StrWords):
            upper = "up"


def test_another_base_or_a_class_keyword_is_refused() -> None:
    class Mixin:
        pass

    with pytest.raises(TypeError, match="derives from Words or StrWords alone"):
        class Mixed(Words, Mixin):  # type: ignore[misc]
            A = "a"

    with pytest.raises(TypeError, match="derives from Words or StrWords alone"):
        exec("class Keyed(Words, boundary=None):\n    A = 'a'\n", {"Words": Words})


def test_words_stand_for_their_enum_base_in_isinstance_and_issubclass() -> None:
    assert isinstance(Kind.LINK, Words) and not isinstance(Kind.LINK, StrWords)
    assert isinstance(Outcome.STALE, StrWords) and isinstance(Outcome.STALE, Words)
    assert issubclass(CheckoutState, Words) and issubclass(Severity, StrWords)
    assert not isinstance("stale", StrWords) and not issubclass(str, Words)
    assert Words not in Kind.__mro__ and Kind.__mro__ == (Kind, enum.Enum, object)
    assert Severity.__mro__ == (Severity, enum.StrEnum, str, enum.ReprEnum, enum.Enum, object)


def test_a_saved_enum_value_still_reads_back() -> None:
    assert PlanKind("clean") is PlanKind.CLEAN and Outcome("config_error") == "config_error"
    assert Kind("symlink") is Kind.LINK and Kind["LINK"] is Kind.LINK
