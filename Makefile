# StackSelect: `make run` starts everything on one machine; `make test` runs lint and the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
VAR := var

TEST_ENV := DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/stackselect} \
	CELERY_BROKER_URL=$${CELERY_BROKER_URL:-redis://127.0.0.1:6379/0} \
	SECRET_KEY=$${SECRET_KEY:-test-only-secret-key-not-for-production} \
	STACKSELECT_VAR_DIR=$${STACKSELECT_VAR_DIR:-$(CURDIR)/var/test}

.PHONY: run demo test lint pytest install install-dev browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed-base: requirements/base.lock domain/pyproject.toml runner/pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --require-hashes -r requirements/base.lock
	$(BIN)/pip install -q --no-deps -e domain -e runner
	touch $@

# The test engine (llama-cpp-python) is compiled for AVX2 rather than this CPU: with -march=native
# on a CPU with AMX, ggml repacks Q4_K weights for AMX and the first completion segfaults.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

$(VENV)/.installed-dev: requirements/dev.lock domain/pyproject.toml runner/pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -q --require-hashes -r requirements/dev.lock
	$(BIN)/pip install -q --no-deps -e domain -e runner
	touch $@ $(VENV)/.installed-base

install: $(VENV)/.installed-base
install-dev: $(VENV)/.installed-dev

$(VAR)/secret_key:
	mkdir -p $(VAR)
	$(BIN)/python -c "import secrets; print(secrets.token_urlsafe(50))" > $@
	chmod 600 $@

run: install $(VAR)/secret_key
	SECRET_KEY_FILE=$(VAR)/secret_key $(BIN)/python manage.py migrate --noinput -v 0
	SECRET_KEY_FILE=$(VAR)/secret_key $(BIN)/python manage.py collectstatic --noinput -v 0
	SECRET_KEY_FILE=$(VAR)/secret_key $(BIN)/python manage.py load_curated
	SECRET_KEY_FILE=$(VAR)/secret_key $(BIN)/python manage.py bootstrap_demo --url http://127.0.0.1:$(PORT)/
	SECRET_KEY_FILE=$(VAR)/secret_key exec $(BIN)/python manage.py run_all --bind 127.0.0.1:$(PORT) \
		--extra "runner=$(BIN)/python manage.py run_local_runner --url http://127.0.0.1:$(PORT)"

# One selection through the whole chain on its own var dir and port; ARGS="--keep" leaves it up.
demo: install
	$(BIN)/python bench/demo_journey.py --var-dir $(VAR)/demo --port 8766 $(ARGS)

browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing Debian's chromium for the browser tests"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }
	@command -v npm >/dev/null 2>&1 || { echo "installing Debian's npm for the accessibility check"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q npm; }
	@test -f tests/browser/node_modules/axe-core/axe.min.js || \
		npm ci --prefix tests/browser --ignore-scripts --no-audit --no-fund

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

pytest: install-dev
	@$(TEST_ENV) $(BIN)/python manage.py preflight
	$(TEST_ENV) $(BIN)/python -m pytest --durations=25 $(ARGS)

test: install-dev browser lint pytest

clean:
	rm -rf $(VENV) $(VAR)/test
