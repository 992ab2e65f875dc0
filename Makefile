# StackSelect: `make run` starts everything on one machine; `make test` runs lint and the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
VAR := var
# llama.cpp's own server, built from the llama.cpp source the pinned llama-cpp-python sdist
# vendors (requirements/dev.lock, hash-checked by pip); the tests run its argument parser on the
# adapter's commands. Kept out of .venv/bin, so never on PATH (an activated venv included): the
# runner prefers a llama-server it finds there, and tests/llamacpp runs llama-cpp-python.
LLAMA_SERVER := $(VENV)/libexec/llama-server
LLAMA_SERVER_CACHE := $(VENV)/cache/llama-server
# ggml (in llama-cpp-python and llama-server) is compiled for AVX2 rather than this CPU: with
# -march=native on a CPU with AMX, ggml repacks Q4_K weights for AMX and the first completion
# segfaults.
GGML_PORTABLE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
# No web UI (its assets are not in the sdist and would come from Hugging Face), no OpenSSL.
LLAMA_SERVER_CMAKE_ARGS := -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF $(GGML_PORTABLE) \
	-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
	-DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
	-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF

TEST_ENV := DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/stackselect} \
	CELERY_BROKER_URL=$${CELERY_BROKER_URL:-redis://127.0.0.1:6379/0} \
	SECRET_KEY=$${SECRET_KEY:-test-only-secret-key-not-for-production} \
	STACKSELECT_VAR_DIR=$${STACKSELECT_VAR_DIR:-$(CURDIR)/var/test} \
	STACKSELECT_LLAMA_SERVER=$(abspath $(LLAMA_SERVER))

.PHONY: run demo test lint pytest install install-dev browser llama-server clean FORCE

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed-base: requirements/base.lock domain/pyproject.toml runner/pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --require-hashes -r requirements/base.lock
	$(BIN)/pip install -q --no-deps -e domain -e runner
	touch $@

$(VENV)/.installed-dev: requirements/dev.lock domain/pyproject.toml runner/pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(GGML_PORTABLE)" $(BIN)/pip install -q --require-hashes -r requirements/dev.lock
	$(BIN)/pip install -q --no-deps -e domain -e runner
	touch $@ $(VENV)/.installed-base

install: $(VENV)/.installed-base
install-dev: $(VENV)/.installed-dev

# The lock's llama-cpp-python line with its hash; rewritten only when it changes, so another
# edit of dev.lock does not rebuild the server.
$(LLAMA_SERVER_CACHE)/requirement.txt: requirements/dev.lock
	@mkdir -p $(@D)
	@awk '/^llama-cpp-python==/ {on = 1} on {print; if ($$0 !~ /\\$$/) exit}' $< > $@.new
	@grep -q -- '--hash=sha256:' $@.new || { rm -f $@.new; \
		echo "requirements/dev.lock pins no llama-cpp-python with a hash" >&2; exit 1; }
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi

# The build's cmake flags, rewritten only when they change: a new flag rebuilds the server.
$(LLAMA_SERVER_CACHE)/cmake-args.txt: FORCE
	@mkdir -p $(@D)
	@echo '$(LLAMA_SERVER_CMAKE_ARGS)' > $@.new
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi

FORCE:

# 11 minutes on 2 cores (measured, see README); needs only PyPI, where pip checks the sdist's hash.
$(LLAMA_SERVER): $(LLAMA_SERVER_CACHE)/requirement.txt $(LLAMA_SERVER_CACHE)/cmake-args.txt | $(BIN)/python
	@command -v cmake >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1 || { \
		echo "building llama-server needs cmake and a C++ compiler (Debian: apt-get install cmake g++)" >&2; \
		exit 1; }
	$(BIN)/pip download -q --no-deps --no-binary :all: --require-hashes -r $< \
		-d $(LLAMA_SERVER_CACHE)/sdist
	rm -rf $(LLAMA_SERVER_CACHE)/src $(LLAMA_SERVER_CACHE)/build
	mkdir -p $(LLAMA_SERVER_CACHE)/src
	version=$$(sed -n 's/^llama-cpp-python==\([^ ]*\).*/\1/p' $<) && \
		tar -xzf $(LLAMA_SERVER_CACHE)/sdist/llama_cpp_python-$$version.tar.gz \
			-C $(LLAMA_SERVER_CACHE)/src --strip-components=1 \
			llama_cpp_python-$$version/CHANGELOG.md llama_cpp_python-$$version/vendor/llama.cpp && \
		commit=$$(awk -v head="## [$$version]" '$$0 == head {on = 1; next} /^## \[/ {on = 0} \
			on && match($$0, /llama\.cpp@[0-9a-f]+/) {print substr($$0, RSTART + 10, RLENGTH - 10); exit}' \
			$(LLAMA_SERVER_CACHE)/src/CHANGELOG.md) && \
		GIT_CEILING_DIRECTORIES=$(abspath $(LLAMA_SERVER_CACHE)) cmake \
			-S $(LLAMA_SERVER_CACHE)/src/vendor/llama.cpp -B $(LLAMA_SERVER_CACHE)/build \
			$(LLAMA_SERVER_CMAKE_ARGS) -DLLAMA_BUILD_NUMBER=0 -DLLAMA_BUILD_COMMIT=$${commit:-unknown} \
			> $(LLAMA_SERVER_CACHE)/configure.log 2>&1 || { tail -n 30 $(LLAMA_SERVER_CACHE)/configure.log; exit 1; }
	GIT_CEILING_DIRECTORIES=$(abspath $(LLAMA_SERVER_CACHE)) cmake \
		--build $(LLAMA_SERVER_CACHE)/build --target llama-server -j 2 \
		> $(LLAMA_SERVER_CACHE)/build.log 2>&1 || { tail -n 30 $(LLAMA_SERVER_CACHE)/build.log; exit 1; }
	$(LLAMA_SERVER_CACHE)/build/bin/llama-server --version
	install -D -m 755 $(LLAMA_SERVER_CACHE)/build/bin/llama-server $@
	rm -rf $(LLAMA_SERVER_CACHE)/src $(LLAMA_SERVER_CACHE)/build

llama-server: $(LLAMA_SERVER)

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

pytest: install-dev $(LLAMA_SERVER)
	@$(TEST_ENV) $(BIN)/python manage.py preflight
	$(TEST_ENV) $(BIN)/python -m pytest --durations=25 $(ARGS)

test: install-dev browser lint pytest

clean:
	rm -rf $(VENV) $(VAR)/test
