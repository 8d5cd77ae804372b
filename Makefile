# Entry points for maintainers and CI.  `make` runs the main job, `make test`
# every test; both install what they need first.  See README.md.

PYTHON  := /usr/bin/python3
KTOPIC  := $(PYTHON) tools/bin/ktopic
PYTEST  := $(PYTHON) -m pytest -c tests/pytest.ini --rootdir=tests

.PHONY: all main verdict deps import generate status gates ci mutate check test test-e2e bench clean ci-local

all: deps main

# The main job: import the packaged tree, generate every branch, show them;
# then one `ktopic ci --main-job`, in two tiers.  Tier 1, the verdict:
# the base, every topic (dependencies first) with its checkpatch and
# hygiene gates, build, boot, tests and expectation boots, the integration
# branch last; the report (out/index.html) is written with the rest
# pending and the log says "first verdict: N/M branches pass".  Tier 2,
# the depth: per topic its build gates (every commit builds; no new
# W=1/sparse warning) and its mutants (each must make the topic's tests
# fail), then for-next+kcsan, the one KCSAN kernel (a race it reports
# builds the topic it is in, or the base, under KCSAN to say whose it
# is); the report fills in.  Everything is cached by content: only what
# changed is built and booted.  Exits 1 if either tier failed.  `make
# gates`, `make ci`, `make mutate` still run one part alone.  --main-job names these gates (--bisect --warnings
# --mutate) in one place, runner/options.py, for this job and every
# pipeline job (ci/run-branch), so that a branch's pipeline job gives the
# main job's verdict.  docs/ci.md, "The main job".
main: import generate status
	$(KTOPIC) ci --main-job

# The main job's first tier alone: every branch built, booted and tested,
# checkpatch and hygiene; the build gates, mutants and sanitizer variants
# stay pending in the report (docs/ci.md, "The main job").
verdict: import generate status
	$(KTOPIC) ci --main-job --first-verdict

import:
	$(KTOPIC) import-base

generate: import
	$(KTOPIC) generate

status:
	$(KTOPIC) status

gates: generate
	$(KTOPIC) check --bisect --warnings

ci: generate
	$(KTOPIC) ci

# After ci: it adds the mutants to ci's out/report.json and index.html.
mutate: ci
	$(KTOPIC) mutate

deps:
	@ci/deps

# Fast unit tests on synthetic repositories (no kernel build), on both
# cores (pytest-xdist; every test has its own temporary directories; one
# process if xdist is not installed), the ten slowest listed so that they
# stay in sight.  Run by hand, a test that needs a missing part (b4,
# gitlab-ci-local, spatch...) is skipped, saying so; with CI=true it fails
# (tests/conftest.py).  `make check CHECK_TESTS=tests/unit/send` runs some.
# Compiled modules and pytest's rewritten test files are kept (in
# tests/.pytest_cache, not beside the sources) even where the environment
# says not to (PYTHONDONTWRITEBYTECODE): every pytest process, and every
# ktopic process the tests start, would compile them again.
# The tests' temporary directories (about 300 MB in 37,000 files a run;
# pytest keeps the last three runs' and removes older ones on exit) are
# made in /dev/shm when it is a tmpfs with room: on a disk mounted with
# discard, as the project machine's is, removing 16,000 files took 70 s.
CHECK_TESTS := tests/unit
XDIST    = $(shell $(PYTHON) -c 'import xdist' 2>/dev/null && echo "-n 2")
BYTECODE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/tests/.pytest_cache/pycache
CHECK_TMP = $(shell df --output=fstype,avail -k /dev/shm 2>/dev/null | \
	awk 'NR == 2 && $$1 == "tmpfs" && $$2 > 4000000 { print "TMPDIR=/dev/shm" }')

check:
	$(BYTECODE) $(CHECK_TMP) $(PYTEST) -q $(XDIST) --durations=10 -m "not e2e" $(CHECK_TESTS)

# Everything: the unit tests, then end-to-end tests on the real packaged tree
# (they share the work directory the main job uses, so import it first).
# Here (and with CI=true) a test skipped for a missing part fails, naming
# it; only tests marked optional may skip (tests/conftest.py).
# `make test TESTS=tests/e2e/test_gates.py` runs some of them.
TESTS   := tests
STRICT  := KTOPIC_TEST_STRICT=1

test: deps import
	$(STRICT) $(PYTEST) -q $(TESTS)

test-e2e: deps import
	$(STRICT) $(PYTEST) -q -m e2e $(TESTS)

# One job of .gitlab-ci.yml on this machine, as a shell runner runs it, in
# this checkout (its work directory: .ktopic/; artifacts: out/ and
# .gitlab-ci-local/artifacts/): make ci-local JOB=topic:fs [OPTIONS=--gates-only];
# no JOB: the whole pipeline.  CI_PROJECT_DIR: gitlab-ci-local would give
# /builds/... (docs/reports.md).
GITLAB_CI_LOCAL := tools/gitlab-ci-local/node_modules/.bin/gitlab-ci-local
JOB     :=
OPTIONS :=
ci-local: deps
	$(GITLAB_CI_LOCAL) --force-shell-executor --timestamps --variable CI_PROJECT_DIR=$(CURDIR) \
		--ignore-predefined-vars CI_PROJECT_DIR --variable KTOPIC_CI_OPTIONS="$(OPTIONS)" $(JOB)

bench: deps
	$(PYTHON) tools/bench/run.py

clean:
	rm -rf out tests/.pytest_cache
