"""Sessions: a REPL kept in a chain store, one chain per cell."""

import asyncio
from pathlib import Path

import pytest

import chainbox


def test_a_cell_sees_the_names_of_the_cells_before_and_their_calls_are_not_made_again(engine):
    made = []

    def fetch() -> str:
        made.append(1)
        return "pong"

    s = engine.session()
    first = s.run("x = await fetch()", tools=[fetch])
    second = s.run("x + '!'", tools=[fetch])
    assert first.ok and second.ok, (first, second)
    assert second.output == "pong!"
    assert (first.cell, second.cell) == (1, 2)
    assert first.session_id == second.session_id == s.id
    assert made == [1]


def test_a_session_in_sqlite_continues_from_another_session_object(engine, tmp_path: Path):
    def ping() -> str:
        return "pong"

    state = f"sqlite:{tmp_path / 'state.db'}"
    first = engine.session(state)
    first.run("n = 41", tools=[ping])
    again = engine.session(state, session_id=first.id)
    r = again.run("n + 1", tools=[ping])
    assert r.output == 42, r
    assert r.cell == 2


def test_an_unknown_store_is_a_session_error(engine):
    with pytest.raises(chainbox.SessionError):
        engine.session("ftp://nowhere").run("1")


def test_a_session_runs_its_cells_under_run_async_with_async_tools(engine):
    async def fetch() -> int:
        return 20

    async def main():
        s = engine.session()
        await s.run_async("x = await fetch()", tools=[fetch])
        return await s.run_async("x + await fetch() + 2", tools=[fetch])

    r = asyncio.run(main())
    assert r.output == 42, r
    assert r.cell == 2
