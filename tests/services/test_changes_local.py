"""SQLite's change notifications between the server processes of one machine: a Unix datagram
socket per listening process, in a directory beside the database file."""

from __future__ import annotations

import asyncio
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from beliefs.services import changes


@pytest.fixture
def directory(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # Short, as a socket's path must be (pytest's tmp_path can be too long for one).
    where = Path(tempfile.mkdtemp(prefix="cc-")) / "changes"
    monkeypatch.setattr(changes, "channel_directory", lambda: where)
    yield where
    shutil.rmtree(where.parent, ignore_errors=True)


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


@pytest.mark.parametrize("name", [":memory:", "file:memorydb_default?mode=memory&cache=shared", ""])
def test_an_in_memory_database_has_no_directory(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(changes.connections["default"].settings_dict, "NAME", name)
    assert changes.channel_directory() is None


def test_one_database_file_has_one_directory_and_another_file_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = changes.connections["default"].settings_dict
    monkeypatch.setitem(settings, "NAME", "/var/lib/console/db.sqlite3")
    first = changes.channel_directory()
    monkeypatch.setitem(settings, "NAME", "/var/lib/console/../console/db.sqlite3")
    assert changes.channel_directory() == first
    monkeypatch.setitem(settings, "NAME", "/var/lib/other/db.sqlite3")
    assert changes.channel_directory() != first
    assert first is not None and first.parent == Path(tempfile.gettempdir())


def test_a_directory_someone_else_could_write_in_is_not_used(directory: Path) -> None:
    directory.mkdir(mode=0o700)
    directory.chmod(0o777)  # as another user's, or a world-writable one, would be
    peer = _peer(directory, "1-peer.sock")
    try:

        async def listens() -> bool:
            return changes.listen_locally()

        assert asyncio.run(listens()) is False
        changes._broadcast("instance-9")
        peer.setblocking(False)
        with pytest.raises(BlockingIOError):
            peer.recv(256)  # nothing was sent into it
    finally:
        peer.close()


def test_the_directory_is_short_whatever_the_database_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deep = "/" + "/".join(["a-rather-long-directory-name"] * 8) + "/db.sqlite3"
    monkeypatch.setitem(changes.connections["default"].settings_dict, "NAME", deep)
    where = changes.channel_directory()
    assert where is not None and len(str(where / "123456-abcdef01.sock")) < 100
