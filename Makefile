# The two commands of the README:
#   make run    install what is missing, build, start the server with the embedded store
#   make test   install what is missing, build, run every test suite
# Other targets: build, deps, bench, fuzz, sanitized-test (the non-slow suites on the debug build),
# debug-test (unit tests only, debug build), clean.

PRESET ?= release
BUILD_DIR := build/$(PRESET)
CAIRN := $(BUILD_DIR)/cairn
NODE_TEST_DIR := tests/integration/node
WEB_DIR := web
WEB_SOURCES := $(shell find $(WEB_DIR)/src $(WEB_DIR)/public -type f 2>/dev/null) \
               $(WEB_DIR)/index.html $(WEB_DIR)/vite.config.js
HOST ?= 127.0.0.1
PORT ?= 5000
JOBS ?= $(shell nproc)

.PHONY: all deps npm-deps ui build run test sanitized-test sanitized-build sanitized-run debug-test bench fuzz \
        clean

all: build

deps:
	@scripts/install-deps.sh

# npm ci only when the lock file changed since the last install.
npm-deps: $(NODE_TEST_DIR)/node_modules/.package-lock.json

$(NODE_TEST_DIR)/node_modules/.package-lock.json: $(NODE_TEST_DIR)/package-lock.json
	cd $(NODE_TEST_DIR) && npm ci --no-audit --no-fund

# The web UI: npm ci when web's lock file changed, vite build when a source did. The build
# compiles web/dist into the binary, which serves it at /.
ui: $(WEB_DIR)/dist/index.html

$(WEB_DIR)/node_modules/.package-lock.json: $(WEB_DIR)/package-lock.json
	cd $(WEB_DIR) && npm ci --no-audit --no-fund

$(WEB_DIR)/dist/index.html: $(WEB_DIR)/node_modules/.package-lock.json $(WEB_SOURCES)
	cd $(WEB_DIR) && npm run build

$(BUILD_DIR)/build.ninja: CMakeLists.txt CMakePresets.json
	cmake --preset $(PRESET)

# The UI first: the binary carries web/dist inside it.
build: deps $(BUILD_DIR)/build.ninja
	@$(MAKE) --no-print-directory ui
	cmake --build --preset $(PRESET) -j $(JOBS)

run: build npm-deps
	$(CAIRN) server --host $(HOST) --port $(PORT)

# ctest shows a suite's output only when it fails; the closing line of every suite is printed
# from ctest's log afterwards, whatever the outcome. `make test` runs every suite on the release
# build, then the unit and integration suites again on the debug build under AddressSanitizer and
# UndefinedBehaviorSanitizer, but for the slow ones and those labelled release-only. The debug
# tree compiles while the release suites run, at the lowest CPU priority so that it takes only
# what they leave idle (most of their time goes to waiting on servers, browsers and pip).
# Leaks inside libraries that cairn cannot fix (each explained in the file).
LSAN_OPTIONS := suppressions=$(CURDIR)/tests/sanitizers/lsan.supp:print_suppressions=0
SUITE_LINES := '^\[  (PASSED|FAILED)  \]|^[a-z0-9_ ]+: [0-9]+ passed, [0-9]+ failed'
DEBUG_BUILD_LOG := build/debug-build.log

test: build npm-deps
	@mkdir -p build; echo "Building the debug preset in the background (log: $(DEBUG_BUILD_LOG))"; \
	( nice -n 19 $(MAKE) --no-print-directory sanitized-build >$(DEBUG_BUILD_LOG) 2>&1 ) & \
	debug_build=$$!; \
	status=0; ctest --preset $(PRESET) --output-on-failure || status=$$?; \
	echo "Suite results ($(PRESET)):"; \
	grep -hE $(SUITE_LINES) $(BUILD_DIR)/Testing/Temporary/LastTest.log | sed 's/^/  /'; \
	echo "Waiting for the debug build"; \
	if wait $$debug_build; then \
	  $(MAKE) --no-print-directory sanitized-run || status=1; \
	else \
	  tail -n 60 $(DEBUG_BUILD_LOG); echo "The debug build failed (log: $(DEBUG_BUILD_LOG))"; status=1; \
	fi; \
	exit $$status

sanitized-test: sanitized-build
	@$(MAKE) --no-print-directory sanitized-run

sanitized-build: deps npm-deps ui
	cmake --preset debug
	cmake --build --preset debug -j $(JOBS)

sanitized-run:
	@status=0; LSAN_OPTIONS=$(LSAN_OPTIONS) ctest --preset debug -LE "slow|package|release-only" --output-on-failure \
	  || status=$$?; \
	echo "Suite results (debug, ASan + UBSan):"; \
	grep -hE $(SUITE_LINES) build/debug/Testing/Temporary/LastTest.log | sed 's/^/  /'; \
	exit $$status

# The unit tests alone under the sanitizers.
debug-test: deps
	cmake --preset debug
	cmake --build --preset debug -j $(JOBS) --target cairn_tests cairn
	LSAN_OPTIONS=$(LSAN_OPTIONS) ctest --preset debug -L unit --output-on-failure

bench: build
	bench/run.sh $(CAIRN)

# Coverage-guided fuzzing of every target in fuzz/ with clang's libFuzzer, FUZZ_SECONDS each.
FUZZ_SECONDS ?= 20
fuzz: deps
	@for f in fuzz/*_fuzz.cc; do t=$$(basename $$f _fuzz.cc); \
	  scripts/fuzz.sh $$t $(FUZZ_SECONDS) || exit 1; done

clean:
	rm -rf build $(WEB_DIR)/dist
