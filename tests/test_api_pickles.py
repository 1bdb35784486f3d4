"""[A3]: a :class:`PreparedProject` pickled where its class was declared before
(``aikito_mem.api``, the name a pickle made by an earlier version records) loads as the
class :mod:`aikito_mem.prepare` declares now and compares equal; one pickled now names
its new room and loads the same."""

from __future__ import annotations

import pickle

from aikito_mem import PreparedProject
from tests.helpers.workspace import WS


def _prepared(ws: WS) -> PreparedProject:
    ws.add_file("a.md", "a\n")
    co = ws.checkout("main")
    ws.write_config("demo", memory=["a.md"], paths=[co])
    return ws.project("demo").prepare("claude")


def test_a_pickle_naming_the_old_room_loads_and_compares_equal(ws: WS) -> None:
    prepared = _prepared(ws)
    now = pickle.dumps(prepared, protocol=2)  # the class named in text: module, name
    assert b"caikito_mem.prepare\nPreparedProject\n" in now
    before = now.replace(b"caikito_mem.prepare\nPreparedProject\n",
                         b"caikito_mem.api\nPreparedProject\n")
    assert before != now
    loaded = pickle.loads(before)
    assert type(loaded) is PreparedProject
    assert loaded == prepared
    assert loaded.result == prepared.result


def test_a_pickle_made_now_loads_at_every_protocol(ws: WS) -> None:
    prepared = _prepared(ws)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(prepared, protocol=protocol)) == prepared
