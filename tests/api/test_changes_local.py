"""SQLite's change notifications between the server processes of one machine: a Unix datagram
socket per listening process, in a directory beside the database file."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from beliefs.services import changes


@pytest.fixture
def directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "db.sqlite3-changes"
    monkeypatch.setattr(changes, "channel_directory", lambda: where)
    return where


def _peer(directory: Path, name: str) -> socket.socket:
    """A socket as another server process binds it."""
    directory.mkdir(mode=0o700, exist_ok=True)
    peer = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    peer.bind(str(directory / name))
    return peer


def test_a_notice_from_another_process_wakes_the_waiter_of_that_instance(
    directory: Path,
) -> None:
    async def scenario() -> tuple[bool, bool]:
        assert changes.listen_locally()
        (own,) = directory.glob("*.sock")
        woken = changes.watch("instance-1")
        other = changes.watch("instance-2")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
                sender.sendto(b"instance-1", str(own))
            await asyncio.wait_for(woken, 10)
            return woken.done(), other.done()
        finally:
            changes.unwatch("instance-1", woken)
            changes.unwatch("instance-2", other)

    assert asyncio.run(scenario()) == (True, False)


def test_a_commit_tells_every_other_listening_process_and_drops_the_sockets_of_dead_ones(
    directory: Path,
) -> None:
    peer = _peer(directory, "1-live.sock")
    dead = _peer(directory, "2-dead.sock")
    dead.close()  # its process ended without removing its socket
    (directory / "notes.txt").write_text("not a socket")
    try:
        changes._broadcast("instance-7")
        peer.settimeout(10)
        assert peer.recv(256) == b"instance-7"
    finally:
        peer.close()
    assert not (directory / "2-dead.sock").exists()
    assert (directory / "1-live.sock").exists() and (directory / "notes.txt").exists()


def test_without_a_directory_nothing_is_sent_and_waiters_poll(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(changes, "channel_directory", lambda: None)
    changes._broadcast("instance-1")  # nothing to send to, nothing raised

    async def listens() -> bool:
        return changes.listen_locally()

    assert asyncio.run(listens()) is False


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("/var/lib/console/db.sqlite3", "/var/lib/console/db.sqlite3-changes"),
        (":memory:", None),
        ("file:memorydb_default?mode=memory&cache=shared", None),
        ("", None),
    ],
)
def test_the_directory_sits_beside_the_database_file(
    name: str, expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import connections

    monkeypatch.setitem(connections["default"].settings_dict, "NAME", name)
    found = changes.channel_directory()
    assert (None if found is None else str(found)) == expected
