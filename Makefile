# The two commands: `make demo` and `make test`. Both create or reuse .venv and install
# what they need; nothing else has to be set up by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint types unit proto proto-check bench clean screenshots mutate sdk

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/arena demo

test: $(STAMP) lint types proto-check
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: $(STAMP)
	$(BIN)/mypy referee workers arena_sdk sample_bots scripts tests bench

proto: $(STAMP)
	$(BIN)/python scripts/gen_proto.py

proto-check: $(STAMP)
	$(BIN)/python scripts/gen_proto.py --check

# The README's pictures of the web (league page, replay, a person's game): the browser
# tests on a real platform, saving screenshots (needs chromium and chromium-driver).
screenshots: $(STAMP)
	ARENA_SCREENSHOTS=docs/img $(BIN)/python -m pytest -q tests/web/test_browser.py
	test -s docs/img/league.png && test -s docs/img/replay.png && test -s docs/img/play.png \
		&& test -s docs/img/play-sedma.png

# Mutation testing of the engines, match loop and clock, schedule, ratings, standings, auth,
# the gateway's answer checks
# (docs/testing.md). Hours for every area on two cores: MUTATE_AREAS=standings picks some,
# MUTATE_ARGS="--functions PATTERN..." some functions. Runs at nice 19, one mutant at a time.
mutate: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,mutate]'
	nice -n 19 $(BIN)/python scripts/mutate.py $(MUTATE_AREAS) $(MUTATE_ARGS)

# The bot SDK alone (arena_sdk + the generated arena code; needs grpcio and protobuf only):
# dist/arena_sdk-VERSION-py3-none-any.whl, what a bot author installs (docs/bots.md).
sdk: $(STAMP)
	$(BIN)/python scripts/build_sdk.py dist

bench: $(STAMP)
	$(BIN)/python bench/engine.py

clean:
	rm -rf $(VENV) .arena .mypy_cache .pytest_cache .ruff_cache
