# The README's two commands: `make demo` and `make test`. Both install what is missing first.
SWIFT ?= swift
BIN_DIR = $(shell $(SWIFT) build --show-bin-path)

.PHONY: deps build test demo clean release man dist install uninstall deb install-check

deps:
	@tools/install-deps

build: deps
	$(SWIFT) build

# Builds everything (the tests run the airtap binaries), then runs the whole suite.
# XDG_STATE_HOME: what the tests' airtap children learn of their stations' title delays stays
# in a folder of the run's own.
test: deps
	$(SWIFT) build --build-tests
	XDG_STATE_HOME="$$(mktemp -d)" AIRTAP_BIN_DIR="$(BIN_DIR)" $(SWIFT) test --skip-build

# The same suite beside two CPU-bound busy loops per core (tools/under-load): what CI runs, so a
# timing margin that holds only on an idle machine fails there.
.PHONY: test-loaded
test-loaded: deps
	$(SWIFT) build --build-tests
	XDG_STATE_HOME="$$(mktemp -d)" AIRTAP_BIN_DIR="$(BIN_DIR)" tools/under-load $(SWIFT) test --skip-build

# Starts the bundled test station on 127.0.0.1 and runs the main job against it.
demo: build
	@AIRTAP_BIN_DIR="$(BIN_DIR)" tools/demo

clean:
	rm -rf .build

# --- Installing: make install / make uninstall (PREFIX, DESTDIR) and make deb ---
PREFIX ?= /usr/local
DESTDIR ?=
RELEASE_BIN_DIR = $(shell $(SWIFT) build -c release --show-bin-path)
DIST = .build/dist
# Man pages come from swift-argument-parser's generate-manual plugin, which builds the package
# in release mode first (so `man` is also the release build); their date is the last commit's,
# so the same sources give the same pages.
MAN_DATE = $(shell git log -1 --format=%cs 2>/dev/null || date +%F)
MAN_OUT = .build/plugins/GenerateManual/outputs/airtap

release: deps
	$(SWIFT) build -c release --product airtap

man: deps
	rm -rf "$(MAN_OUT)"
	$(SWIFT) package --allow-writing-to-package-directory generate-manual --multi-page \
	  --date "$(MAN_DATE)" --authors "the airtap developers"

# The tree both install and deb ship, for PREFIX (tools/package/stage says what is in it).
dist: man
	tools/package/stage "$(RELEASE_BIN_DIR)" "$(MAN_OUT)" "$(DIST)/local" "$(PREFIX)"

install: dist
	mkdir -p "$(DESTDIR)$(PREFIX)"
	cp -R "$(DIST)/local/tree/." "$(DESTDIR)$(PREFIX)/"

# Removes exactly what install put there (the list is fixed, so uninstall needs no build).
uninstall:
	rm -f "$(DESTDIR)$(PREFIX)/bin/airtap" \
	  "$(DESTDIR)$(PREFIX)"/share/man/man1/airtap.1.gz "$(DESTDIR)$(PREFIX)"/share/man/man1/airtap-*.1.gz \
	  "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/airtap" \
	  "$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_airtap" \
	  "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/airtap.fish" \
	  "$(DESTDIR)$(PREFIX)/lib/systemd/user/airtap-record@.service" \
	  "$(DESTDIR)$(PREFIX)/lib/systemd/user/airtap-record@.timer"
	rm -rf "$(DESTDIR)$(PREFIX)/share/doc/airtap"

# A Debian package for /usr, with dpkg-deb; Depends from dpkg-shlibdeps. Lands in .build/dist/.
deb: man
	tools/package/stage "$(RELEASE_BIN_DIR)" "$(MAN_OUT)" "$(DIST)/deb" /usr share/zsh/vendor-completions
	tools/package/build-deb "$(DIST)/deb" "$(DIST)"

# The Kubernetes manifests against the API schemas (kubernetes-validate bundles them: no cluster,
# no network beyond PyPI for the tool itself), then against Pod Security "restricted" and what
# the schemas cannot see (tools/deploy/check-pod-security says what).
.PHONY: validate-deploy
validate-deploy:
	python3 -m pip install -q --disable-pip-version-check kubernetes-validate
	python3 -m kubernetes_validate --strict deploy/kubernetes/*.yaml
	tools/deploy/check-pod-security deploy/kubernetes/*.yaml

# CI: install the package built here on this machine, then use it as a user would.
install-check: deb
	tools/package/install-check "$(DIST)"

# --- Sanitizers and fuzzing ---
.PHONY: tsan fuzz-smoke check

# The test suite under ThreadSanitizer, in its own scratch folder (a TSan build shares nothing
# with the normal one). The tests run the TSan-built airtap binaries, so races in the
# executables show too. TSAN_FILTER narrows it (--filter/--skip, regular expressions). Skipped
# by default, neither for a race airtap has:
# - twoHundredSimultaneousFastClients...: a throughput test of the test station; TSan's 5-15x
#   slowdown pushes it past its 15 s deadline.
# - fileSizeLimit, noNameHuntOnWriteErrors, serveWithAFailedRecording, relayWriteFailure: run a
#   TSan-built airtap under RLIMIT_FSIZE, and TSan's own runtime dies there before airtap can
#   exit 3 (SIGBUS, or "nested bug in the same thread").
# - killedRecording: bounds the audio a SIGKILL loses in wall-clock seconds (at most about one);
#   under TSan's 5-15x slowdown the child's once-a-second flush falls that far behind the station.
# - OggIcecastTests: ezstream plays its playlist in real time from the moment it starts; under TSan
#   the airtap children connect after the second link began, so that link is (rightly) incomplete.
# - recordersOpeningANewIndexAtOnce: 240 SQLite opens racing on four threads, bounded only by
#   SQLite's 10 s busy timeout per open; SQLite is not instrumented, so TSan adds nothing there, and
#   one TSan run beside it stalled the whole test process for nine minutes (cause not found).
# (airtap locks with Locking.Locked, a pthread mutex TSan sees: Synchronization.Mutex on Linux
# uses raw futexes TSan does not instrument, and every access it guards would be reported.)
TSAN_SCRATCH = .build-tsan
TSAN_BIN_DIR = $(shell $(SWIFT) build --show-bin-path --scratch-path $(TSAN_SCRATCH))
TSAN_FILTER ?= --skip 'twoHundredSimultaneousFastClientsEachGetTheirBytes|fileSizeLimit|noNameHuntOnWriteErrors|serveWithAFailedRecording|relayWriteFailure|killedRecording|OggIcecastTests|recordersOpeningANewIndexAtOnce'
# tools/tsan/suppressions.txt lists the reports that are not airtap's races, each with its reason.
# Every report (the test process's and each airtap child's) goes to a file of its own, and they
# are printed after the run with their SUMMARY lines last: a report in a child's stderr file or
# in the middle of a long log would otherwise be easy to miss.
TSAN_REPORTS = $(CURDIR)/$(TSAN_SCRATCH)/reports
tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path $(TSAN_SCRATCH)
	rm -rf "$(TSAN_REPORTS)" && mkdir -p "$(TSAN_REPORTS)"
	status=0; TSAN_OPTIONS="log_path=$(TSAN_REPORTS)/report suppressions=$(CURDIR)/tools/tsan/suppressions.txt $$TSAN_OPTIONS" \
	  XDG_STATE_HOME="$$(mktemp -d)" AIRTAP_BIN_DIR="$(TSAN_BIN_DIR)" \
	  $(SWIFT) test --skip-build --sanitize=thread --scratch-path $(TSAN_SCRATCH) $(TSAN_FILTER) || status=$$?; \
	tools/tsan-reports "$(TSAN_REPORTS)" || status=1; exit $$status

# Each libFuzzer target of tools/fuzz/ for 30 s (see tools/fuzz/run; crashers in .build-fuzz/crashes/).
fuzz-smoke:
	tools/fuzz/run 30

# What CI runs: the suite (beside a CPU load), the suite under TSan, and the fuzz smoke.
check: test-loaded tsan fuzz-smoke

# --- Benchmarks: not part of test/check; about 20 minutes on 2 cores (bench/README.md) ---
# airtap against streamripper, icecast2 and mpg123 on 127.0.0.1: bench/results.md + bench/results.json.
.PHONY: bench
bench:
	@tools/install-deps bench
	$(SWIFT) build -c release
	tools/bench/bench.py --bin-dir "$(shell $(SWIFT) build -c release --show-bin-path)"
