# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8000

.PHONY: run serve test check install lock lint format bench docs typescript clean

## Installs exactly what requirements.lock pins (with their hashes), then the project and the
## client without resolving anything again, so two installs a month apart are the same.
$(STAMP): pyproject.toml client/pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --require-hashes --no-deps -r requirements.lock
	$(PY) -m pip install --quiet --no-deps . -e ./client
	touch $(STAMP)

install: $(STAMP)

## Re-resolve requirements.lock from the ranges in pyproject.toml and client/pyproject.toml
## with pip-tools in a throwaway virtualenv, keeping every pin that still fits: run it after
## editing a range. `make lock UPGRADE=django` moves that package to its newest allowed version,
## `make lock UPGRADE=all` moves them all. Review the diff, run `make test`, commit both.
LOCKENV := $(VENV)-lock
lock:
	$(PYTHON) -m venv $(LOCKENV)
	$(LOCKENV)/bin/pip install --quiet "pip-tools>=7.4"
	$(LOCKENV)/bin/pip-compile --quiet --all-extras --strip-extras --generate-hashes \
	  --allow-unsafe --no-emit-index-url --no-emit-find-links --output-file requirements.lock \
	  $(if $(filter all,$(UPGRADE)),--upgrade,$(if $(UPGRADE),--upgrade-package $(UPGRADE))) pyproject.toml client/pyproject.toml
	rm -rf $(LOCKENV)

## The TypeScript client's OpenAPI document and the types generated from it (commit both after
## an API change; CI fails when they drift), then the contract its types must hold.
typescript: $(STAMP)
	$(PY) manage.py spectacular --format openapi-json --file clients/typescript/openapi.json
	cd clients/typescript && npm ci --no-audit --no-fund && npm run types && npm run typecheck

## Serve the demo on http://localhost:8000 (bound to 127.0.0.1; a name, not an IP address,
## because passkeys refuse one) with one background worker beside it (SQLite unless
## DATABASE_URL is set): uvicorn serving console.asgi as `make serve` does, in one process that
## starts again when a module or template changes (`console.serve --reload`). Ctrl-C stops
## both; so does the server stopping on its own.
## The logins and the runtime key are printed last (`demo --when-served`): once the server
## answers and the worker has sent the demo's emails, each one log line (no EMAIL_HOST:
## `beliefs.mail.LogEmailBackend`).
run: $(STAMP)
	$(PY) manage.py migrate --noinput
	@export CONSOLE_BASE_URL=http://localhost:$(PORT); \
	$(PY) manage.py worker & worker=$$!; \
	$(PY) -m console.serve --reload --host 127.0.0.1 --port $(PORT) & server=$$!; \
	trap 'kill $$worker $$server 2>/dev/null; wait $$worker $$server 2>/dev/null' EXIT INT TERM; \
	$(PY) manage.py demo --url http://localhost:$(PORT)/ --when-served; \
	wait $$server

## The production server: uvicorn on 0.0.0.0:$PORT in $WEB_CONCURRENCY processes (default 2),
## one event loop each, so a process holds thousands of long-polls (Prefer: wait), each process
## listening on a socket of its own (console/serve.py), so that new connections spread over
## them. Settings from the environment (see docs/production.md); run `manage.py worker` beside
## it. A process answers requests on a small fixed pool of threads (REQUEST_THREADS;
## console/asgi.py): on PostgreSQL it keeps a pool of up to DATABASE_POOL connections (default
## 12, at least as many as the threads) that its requests take in turn; on SQLite each of those
## threads keeps its connection (DATABASE_CONN_MAX_AGE, 60 s in production).
WEB_CONCURRENCY ?= 2
serve: $(STAMP)
	DATABASE_POOL=$${DATABASE_POOL:-12} \
	  $(PY) -m console.serve --host 0.0.0.0 --port $(PORT) --workers $(WEB_CONCURRENCY)

## The loopback OpenID Connect provider the single sign-on tests start (tests/oidc_provider/):
## installed from its package-lock.json with npm (Node 20+) when missing or when the lock changed.
OIDC_PROVIDER := tests/oidc_provider
OIDC_PROVIDER_STAMP := $(OIDC_PROVIDER)/node_modules/.installed
$(OIDC_PROVIDER_STAMP): $(OIDC_PROVIDER)/package.json $(OIDC_PROVIDER)/package-lock.json
	cd $(OIDC_PROVIDER) && npm ci --no-audit --no-fund
	touch $(OIDC_PROVIDER_STAMP)

## Lint, then the whole test suite in two processes (browser tests need /usr/bin/chromium)
## with mypy running beside it (its report is printed after pytest's), then the client's own
## tests. Fails if any of them fails. Bytecode is written even where PYTHONDONTWRITEBYTECODE
## is set: each test process would otherwise compile every module and redo pytest's assertion
## rewriting of ~700 modules (the test files and the pytest plugins' packages), 5 s a process.
test: export PYTHONDONTWRITEBYTECODE=
test: $(STAMP) $(OIDC_PROVIDER_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run
	@mkdir -p artifacts; \
	$(VENV)/bin/mypy > artifacts/mypy.txt 2>&1 & mypy=$$!; \
	$(PY) -m pytest -n 2 --dist loadfile $(PYTEST_ARGS); tests=$$?; \
	wait $$mypy; typed=$$?; \
	echo "--- mypy"; cat artifacts/mypy.txt; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]
	cd client && $(abspath $(PY)) -m pytest -p no:django

## The inner loop: lint, then the tests that are neither `browser`, `servers` nor `fuzz` (see
## pyproject.toml's markers) in two processes, with mypy beside them as in `make test`. The
## test databases are kept between runs (pytest-django's --reuse-db: Django applies new
## migrations to them; `make check PYTEST_ARGS=--create-db` builds them afresh). The tests are
## handed out one by one as a process frees up (worksteal): by file, the last big files kept
## one process busy alone (80 s against 68 s on a 2-core machine).
## `make test` before pushing still runs everything.
FAST := not browser and not servers and not fuzz and not migrations
check: export PYTHONDONTWRITEBYTECODE=
check: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@mkdir -p artifacts; \
	$(VENV)/bin/mypy > artifacts/mypy.txt 2>&1 & mypy=$$!; \
	$(PY) -m pytest -n 2 --dist worksteal --reuse-db -m "$(FAST)" $(PYTEST_ARGS); tests=$$?; \
	wait $$mypy; typed=$$?; \
	echo "--- mypy"; cat artifacts/mypy.txt; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

## Print the benchmark table (never a timed test): SQLite, and PostgreSQL when DATABASE_URL
## names one (in a database of its own, BENCH_DATABASE_URL or <name>_bench, dropped first).
## A full run also writes it into docs/benchmarks.md, between the markers there.
## Needs wrk for the requests-per-second rows (installed here with apt-get when missing).
## `make bench BENCH_ARGS=--quick` takes a tenth of the data.
bench: $(STAMP)
	command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null || echo "wrk missing: no requests/s rows"
	$(PY) -m bench $(BENCH_ARGS)

## Build the pages under docs/ into site/ (git-ignored) with MkDocs. --strict turns every
## warning into a failure, so a link to a missing page or anchor fails the build; CI runs it.
## Not --quiet: MkDocs counts only the warnings it prints, so quiet would let them all pass.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) db.sqlite3 staticfiles artifacts site
