# The README's two commands: `make demo` and `make test`. Both install what is missing first.
SWIFT ?= swift
BIN_DIR = $(shell $(SWIFT) build --show-bin-path)

.PHONY: deps build test demo clean

deps:
	@tools/install-deps

build: deps
	$(SWIFT) build

# Builds everything (the tests run the airtap binaries), then runs the whole suite.
test: deps
	$(SWIFT) build --build-tests
	AIRTAP_BIN_DIR="$(BIN_DIR)" $(SWIFT) test --skip-build

# Starts the bundled test station on 127.0.0.1 and runs the main job against it.
demo: build
	@AIRTAP_BIN_DIR="$(BIN_DIR)" tools/demo

clean:
	rm -rf .build
