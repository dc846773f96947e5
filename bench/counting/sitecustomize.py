"""Counts the SQL statements a process sends, and the transactions that sent any: imported by
Python at start-up (`sitecustomize`) in every process started with this directory on
PYTHONPATH and BENCH_COUNTS set (`bench.common.counting_env`), the server processes `make
serve` spawns and `manage.py worker` among them. Each process writes "statements transactions"
to BENCH_COUNTS/<pid> every 0.2 s; `bench.common.counted` sums them. Benchmark tooling only:
nothing else puts this directory on the path."""

import os
import threading
import time

_DIRECTORY = os.environ.get("BENCH_COUNTS")

if _DIRECTORY:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.backends.signals import connection_created

    _counts = [0, 0]
    _lock = threading.Lock()

    def _counted(execute, sql, params, many, context):  # noqa: ANN001, ANN202
        connection = context["connection"]
        with _lock:
            _counts[0] += 1
        if not connection.get_autocommit():
            connection.bench_in_transaction = True
        return execute(sql, params, many, context)

    def _created(sender, connection, **kwargs):  # noqa: ANN001, ANN003, ANN202
        if _counted not in connection.execute_wrappers:
            connection.execute_wrappers.append(_counted)

    connection_created.connect(_created, weak=False)
    _commit = BaseDatabaseWrapper.commit

    def _counted_commit(self):  # noqa: ANN001, ANN202
        if getattr(self, "bench_in_transaction", False):
            self.bench_in_transaction = False
            with _lock:
                _counts[1] += 1
        return _commit(self)

    BaseDatabaseWrapper.commit = _counted_commit  # type: ignore[method-assign]
    _path = os.path.join(_DIRECTORY, str(os.getpid()))

    def _write() -> None:
        while True:
            with _lock:
                text = f"{_counts[0]} {_counts[1]}"
            with open(_path + ".tmp", "w") as out:
                out.write(text)
            os.replace(_path + ".tmp", _path)
            time.sleep(0.2)

    threading.Thread(target=_write, daemon=True, name="bench-counts").start()
