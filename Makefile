# The two commands of the README:
#   make run    install what is missing, build, start the server with the embedded store
#   make test   install what is missing, build, run every test suite
# Other targets: build, deps, bench, debug-test (unit tests under ASan and UBSan), clean.

PRESET ?= release
BUILD_DIR := build/$(PRESET)
CAIRN := $(BUILD_DIR)/cairn
NODE_TEST_DIR := tests/integration/node
HOST ?= 127.0.0.1
PORT ?= 5000
JOBS ?= $(shell nproc)

.PHONY: all deps npm-deps build run test debug-test bench clean

all: build

deps:
	@scripts/install-deps.sh

# npm ci only when the lock file changed since the last install.
npm-deps: $(NODE_TEST_DIR)/node_modules/.package-lock.json

$(NODE_TEST_DIR)/node_modules/.package-lock.json: $(NODE_TEST_DIR)/package-lock.json
	cd $(NODE_TEST_DIR) && npm ci --no-audit --no-fund

$(BUILD_DIR)/build.ninja: CMakeLists.txt CMakePresets.json
	cmake --preset $(PRESET)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build --preset $(PRESET) -j $(JOBS)

run: build
	$(CAIRN) server --host $(HOST) --port $(PORT)

# ctest shows a suite's output only when it fails; the closing line of every suite is printed
# from ctest's log afterwards, whatever the outcome.
test: build npm-deps
	@status=0; ctest --preset $(PRESET) --output-on-failure || status=$$?; \
	echo "Suite results:"; \
	grep -hE '^\[  (PASSED|FAILED)  \]|^[a-z_ ]+: [0-9]+ passed, [0-9]+ failed' \
	  $(BUILD_DIR)/Testing/Temporary/LastTest.log | sed 's/^/  /'; \
	exit $$status

debug-test: deps
	cmake --preset debug
	cmake --build --preset debug -j $(JOBS) --target cairn_tests cairn
	ctest --preset debug -L unit --output-on-failure

bench: build
	bench/run.sh $(CAIRN)

clean:
	rm -rf build
