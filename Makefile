# Llamatray — build, run, test and package.
#   make run    install what the desktop build needs (Debian/Ubuntu) and start the app
#   make test   install test dependencies and run every test (race detector on)

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
GO      ?= go
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
LLAMATRAY_CACHE ?= $(HOME)/.cache/llamatray-dev
LLAMA_SERVER_BIN := $(LLAMATRAY_CACHE)/llama-server/bin/llama-server
WINE_BIN := $(LLAMATRAY_CACHE)/wine/bin/wine

# Debian packages: Fyne's cgo build, plus the headless desktop test tools.
DEB_BUILD := gcc pkg-config libgl1-mesa-dev xorg-dev
DEB_TEST  := xvfb xauth dbus dbus-x11 imagemagick patchelf xdotool curl python3-gi gir1.2-dbusmenu-gtk3-0.4
DEB_PKG   := nsis gcc-mingw-w64-x86-64 imagemagick file dpkg-dev rpm rpmlint shellcheck

.PHONY: all build run deps deps-test deps-package test test-short e2e e2e-vulkan gpu-check llama-server llama-server-vulkan bench bench-draft bench-peers bench-swap chaos chaos-small sim sim-small soak fuzz fuzz-hostile screenshot \
        package-linux package-windows package-macos lint-packaging check-packages clean wine test-windows \
        e2e-release release-snapshot release-dist check-release build-darwin build-headless vet-darwin vet-windows lint-workflows

all: build

build:
	@test -e llamatray || echo "building llamatray: the first build compiles Fyne (cgo) and takes five to fifteen minutes on two cores, each package named as it is compiled (go-gl's C is the long one); later ones take seconds"
	$(GO) build $(if $(wildcard llamatray),,-v) -trimpath -ldflags "$(LDFLAGS)" -o llamatray .

# deps installs the Debian/Ubuntu packages Fyne needs when they are missing.
deps:
	@if command -v apt-get >/dev/null 2>&1; then \
	  missing=""; for p in $(DEB_BUILD); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	    $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; fi; \
	else \
	  echo "Not a Debian/Ubuntu machine. Install a C compiler and OpenGL/X11 headers:"; \
	  echo "  Fedora: sudo dnf install gcc libXcursor-devel libXrandr-devel mesa-libGL-devel libXi-devel libXinerama-devel libXxf86vm-devel"; \
	  echo "  Arch:   sudo pacman -S go xorg-server-devel libxcursor libxrandr libxinerama libxi mesa"; \
	  echo "  macOS:  xcode-select --install"; \
	fi

deps-test: deps
	@if command -v apt-get >/dev/null 2>&1; then \
	  missing=""; for p in $(DEB_TEST); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	    $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; fi; \
	fi

deps-package: deps
	@if command -v apt-get >/dev/null 2>&1; then \
	  missing=""; for p in $(DEB_PKG); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	    $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; fi; \
	fi

run: deps build
	./llamatray

# test runs every test with the race detector. The end-to-end suite runs too when LLAMA_SERVER is set
# (`make e2e` fetches the real llama-server and sets it).
test: deps-test
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...
	@# Race builds read and write through the syscall package (router/internal/rawio): the raw path once more without.
	$(GO) test -count=1 -timeout 10m ./router/internal/rawio/ ./router/child/ ./router/front/ ./router/httpapi/ ./router/testbed/bench/

test-short:
	$(GO) test -race -count=1 ./router/...

llama-server:
	@bash scripts/fetch-llama-server.sh >/dev/null
	@echo $(LLAMA_SERVER_BIN)

# A model split over two rpc-servers, straight and through the worker links: the Workers section.
.PHONY: bench-workers
bench-workers: llama-server deps
	$(GO) run ./router/testbed/bench -workers -llama-server $(LLAMA_SERVER_BIN) -out docs/benchmarks.md

# The first memory estimate of eight architectures (real vocabularies and tensor layouts) against the
# llama-server child's peak resident set: the Memory fit section of docs/benchmarks.md.
.PHONY: bench-fit
bench-fit: llama-server deps
	$(GO) run ./router/testbed/bench -fit -llama-server $(LLAMA_SERVER_BIN) -out docs/benchmarks.md

# The idle desktop app's CPU and resident memory with its window open and a model loaded, under Xvfb:
# a figure to compare between changes, not a limit `make test` fails on.
.PHONY: bench-app
bench-app: deps
	$(GO) test -count=1 -run '^$$' -bench IdleWindowOpen ./app/traytest/

# llama.cpp's RPC worker (issue #24's workers), fetched with llama-server: its wrapper's path.
.PHONY: rpc-server
rpc-server: llama-server
	@echo $(LLAMATRAY_CACHE)/llama-server/bin/ggml-rpc-server

llama-server-vulkan:
	@VULKAN=1 bash scripts/fetch-llama-server.sh >/dev/null
	@echo $(LLAMATRAY_CACHE)/llama-server-vulkan/bin/llama-server

# The end-to-end test on a real device: llama-server's Vulkan backend on Mesa's lavapipe.
e2e-vulkan: llama-server-vulkan
	LLAMA_SERVER_VULKAN=$(LLAMATRAY_CACHE)/llama-server-vulkan/bin/llama-server $(GO) test -race -count=1 -timeout 15m -v -run TestGPUDeviceBudget ./router/e2e/

# The official Ollama clients (npm ollama, @langchain/ollama, Debian's python3-ollama) are installed first.
e2e: llama-server
	@bash scripts/ollama-clients.sh
	LLAMA_SERVER=$(LLAMA_SERVER_BIN) $(GO) test -race -count=1 -timeout 30m -v ./router/e2e/
	@# The real llama-server's tests that live beside the code they check.
	LLAMA_SERVER=$(LLAMA_SERVER_BIN) $(GO) test -race -count=1 -timeout 10m -v -run 'RealLlamaServer|RealServer' ./router/catalog/ ./router/locate/ ./router/mem/ ./router/testbed/ggufwrite/
	@$(MAKE) --no-print-directory newcomer

# A newcomer's way in the window, from an empty home to a first answer, with the real llama-server
# installed from the releases stand-in and a starter pulled from the Hub stand-in: its clicks,
# keystrokes and seconds.
.PHONY: newcomer
newcomer: llama-server
	LLAMA_SERVER=$(LLAMA_SERVER_BIN) $(GO) test -race -count=1 -timeout 10m -v -run 'TestNewcomerPath$$' ./app/

# The end-to-end suite with llama.cpp's own release build (Metal on macOS arm64, CPU elsewhere),
# installed by Llamatray itself: the hosted CI's (.github/workflows/ci.yml) on each system.
e2e-release:
	LLAMA_SERVER="$$(bash scripts/llama-server-release.sh)" && export LLAMA_SERVER && \
	  $(GO) test -race -count=1 -timeout 30m -v ./router/e2e/

# Benchmarks and proof runs (issue-level figures; none of them are timed assertions in unit tests).
# The router is measured as users run it: the llamatray binary of `make build`, as its own process.
bench: llama-server deps build
	$(GO) run ./router/testbed/bench -llama-server $(LLAMA_SERVER_BIN) -llamatray ./llamatray -duration 10s -out docs/benchmarks.md

# Tokens per second of one model through Llamatray without a draft, with a draft that agrees and
# with one that does not (speculative decoding): the Draft models section of docs/benchmarks.md.
bench-draft: llama-server deps build
	$(GO) run ./router/testbed/bench -draft -llama-server $(LLAMA_SERVER_BIN) -llamatray ./llamatray -out docs/benchmarks.md

# On a machine with a GPU: the memory probe (NVML, nvidia-smi), the simulated workload on its real
# sizes and, with LLAMA_SERVER_GPU (a CUDA/ROCm llama-server), two real-size models on the device.
gpu-check:
	bash scripts/gpu-check.sh

# Llamatray, llama.cpp's router (the same llama-server with --models-dir) and llama-swap side by side,
# room for one model: the Peers section of docs/benchmarks.md. llama-swap is built from its source
# (github.com/mostlygeek/llama-swap, tag v250,
# `go build -ldflags '-X main.version=v250' -o llama-swap .`); pass LLAMA_SWAP=PATH. nginx in front of
# the same llama-server is the floor of a proxy hop: Debian's nginx-light, unpacked into the cache by
# scripts/fetch-nginx.sh unless NGINX=PATH names one.
bench-peers: llama-server deps build
	@test -n "$(LLAMA_SWAP)" || { echo "bench-peers: set LLAMA_SWAP to a llama-swap binary: git clone https://github.com/mostlygeek/llama-swap && cd llama-swap && git checkout v250 && go build -ldflags '-X main.version=v250' -o llama-swap ."; exit 2; }
	$(GO) run ./router/testbed/bench -peers -llama-server $(LLAMA_SERVER_BIN) -llama-swap "$(LLAMA_SWAP)" -nginx "$${NGINX:-$$(bash scripts/fetch-nginx.sh | tail -n1)}" -llamatray ./llamatray -duration 10s -out docs/benchmarks.md

# Three models of 1.5 GB, room for one and for two, six clients sending 48 requests back to back through
# direct spawns, llama.cpp's router, llama-swap and Llamatray: loads, time to first token, the slowest
# request, the page-cache floor (the Swaps at real size section of docs/benchmarks.md). LLAMA_SWAP as
# for bench-peers.
bench-swap: llama-server deps build
	@test -n "$(LLAMA_SWAP)" || { echo "bench-swap: set LLAMA_SWAP to a llama-swap binary (see bench-peers)"; exit 2; }
	$(GO) run ./router/testbed/bench -swap -llama-server $(LLAMA_SERVER_BIN) -llama-swap "$(LLAMA_SWAP)" -llamatray ./llamatray -max-tokens 4 -out docs/benchmarks.md

# The chaos mix on four simulated machines (24 GB NVIDIA + 64 GB RAM, two 16 GB GPUs, a 36 GB
# Apple-silicon Mac, a 16 GB GPU with two 12 GB RPC workers) with the fake llama-server: figures
# into docs/benchmarks.md; sim-small is CI's.
sim:
	$(GO) run ./router/testbed/chaos -sim -out docs/benchmarks.md

sim-small:
	$(GO) run ./router/testbed/chaos -sim-small

chaos: llama-server
	$(GO) run ./router/testbed/chaos -llama-server $(LLAMA_SERVER_BIN) -requests 2000 -clients 32

chaos-small: llama-server
	LLAMA_SERVER=$(LLAMA_SERVER_BIN) $(GO) test -race -count=1 -timeout 5m -run TestSmallChaosRun -v ./router/testbed/chaos/

soak: llama-server
	$(GO) run ./router/testbed/chaos -llama-server $(LLAMA_SERVER_BIN) -soak

# Each target runs a number of inputs, not a time: with a time (-fuzztime 15s) Go 1.26's fuzzing
# coordinator can fail a clean run with a bare "context deadline exceeded": its deadline's context is
# done a moment before the workers' child context, and a worker's stop in that moment counts as an error
# (go.dev/issue/75804, fixed in Go 1.27). The counts take about 15 s each on two cores; FUZZSCALE
# multiplies them (make fuzz runs four times as many), FUZZTIME=60s still runs by time.
FUZZSCALE ?= 4
FUZZTIME ?=
# Go's default (60 s) lets minimizing one slow input (a file written and parsed per run) eat the whole run.
FUZZMINIMIZE ?= 5s
# $(call fuzz1,Target,./package/,inputs[,minimize])
fuzz1 = $(GO) test -run '^$$' -fuzz '^$(1)$$' -fuzztime $(or $(FUZZTIME),$(shell echo $$(( $(3) * $(FUZZSCALE) )))x) -fuzzminimizetime $(or $(4),$(FUZZMINIMIZE)) $(2)
fuzz:
	$(call fuzz1,FuzzExtractModel,./router/httpapi/,50000)
	$(call fuzz1,FuzzLoad,./router/config/,30000)
	$(call fuzz1,FuzzParse,./router/catalog/,20000)
	$(MAKE) fuzz-hostile

# What a hostile mirror or archive sends: the Hub's tree paths and release archives; what a hostile
# client sends a worker's link, what a hostile worker answers a head, and mDNS announcements; and request heads the endpoint's front must read as net/http does, or
# leave to it (request smuggling), and the answer heads of a llama-server read as net/http reads them. CI runs it briefly.
# An unpacking run writes files, so minimizing is bounded by count, not time (5 s would eat the run).
fuzz-hostile:
	$(call fuzz1,FuzzTreePath,./router/hub/,100000)
	$(call fuzz1,FuzzUnpack,./router/releases/,8000,200x)
	$(call fuzz1,FuzzRequestLine,./router/worker/,6000)
	$(call fuzz1,FuzzAnswer,./router/worker/,6000)
	$(call fuzz1,FuzzFromEntry,./router/discover/,50000)
	$(call fuzz1,FuzzParseHead,./router/front/,200000)
	$(call fuzz1,FuzzReadAnswer,./router/httpapi/,60000)

# The real window under Xvfb, one model loaded with an active stream → docs/screenshot.png.
screenshot: deps-test
	bash scripts/screenshot.sh docs/screenshot.png

# Installers. Versions must start with a digit: a tag vX.Y.Z, else FyneApp.toml's Version.
DIST ?= dist
PKG_VERSION ?= $(shell git describe --tags --match 'v[0-9]*' 2>/dev/null | sed 's/^v//' | grep . || sed -n 's/^ *Version = "\(.*\)"/\1/p' FyneApp.toml)

package-linux: deps-package
	$(GO) build -trimpath -buildmode=pie -ldflags "-s -w -X main.version=$(PKG_VERSION) -X main.commit=$(COMMIT)" -o build/linux/llamatray .
	packaging/linux/build-deb.sh $(PKG_VERSION) build/linux/llamatray $(DIST)
	packaging/linux/build-tarball.sh $(PKG_VERSION) build/linux/llamatray $(DIST)

package-windows: deps-package
	packaging/windows/build-exe.sh $(PKG_VERSION) build/windows/llamatray.exe
	packaging/windows/build-installer.sh $(PKG_VERSION) build/windows/llamatray.exe $(DIST)

package-macos:
	packaging/macos/build-dmg.sh $(PKG_VERSION) $(DIST)

lint-packaging:
	packaging/lint.sh

# check-packages builds the Linux and Windows installers and checks them as a user would get them:
# the .deb installs with apt, runs, and removes cleanly; the Windows installer is a 64-bit PE executable.
check-packages: package-linux package-windows
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq ./$(DIST)/llamatray_$(PKG_VERSION)_amd64.deb
	/usr/bin/llamatray version
	$(SUDO) dpkg -r llamatray
	@test ! -e /usr/bin/llamatray || { echo "dpkg -r left /usr/bin/llamatray"; exit 1; }
	file $(DIST)/Llamatray-Setup-$(PKG_VERSION).exe | grep -q 'PE32+ executable.*x86-64' || { echo "not a 64-bit PE executable"; exit 1; }
	@ls -l $(DIST)

# The Windows build under Wine 10, unpacked from Debian unstable by scripts/fetch-wine.sh (Debian 12's
# Wine 8 cannot start Go programs): llamatray.exe serving the fake llama-server built for Windows, its
# command line, Job Object and crash restarts, then the setup installing and uninstalling it.
wine:
	@bash scripts/fetch-wine.sh >/dev/null
	@echo $(WINE_BIN)

test-windows: package-windows wine
	LLAMATRAY_WINE=$(WINE_BIN) LLAMATRAY_WINDOWS_EXE=$(CURDIR)/build/windows/llamatray.exe \
	  LLAMATRAY_WINDOWS_SETUP=$(abspath $(DIST))/Llamatray-Setup-$(PKG_VERSION).exe \
	  $(GO) test -race -count=1 -timeout 15m -v ./router/testbed/wintest/

# Release tools, pinned, built once into the cache (GoReleaser takes minutes to compile).
TOOLS := $(LLAMATRAY_CACHE)/tools
GORELEASER_VERSION := v2.15.1
ACTIONLINT_VERSION := v1.7.12
GORELEASER := $(TOOLS)/goreleaser-$(GORELEASER_VERSION)/goreleaser
ACTIONLINT := $(TOOLS)/actionlint-$(ACTIONLINT_VERSION)/actionlint
$(GORELEASER):
	GOBIN=$(dir $@) $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)
$(ACTIONLINT):
	GOBIN=$(dir $@) $(GO) install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

# release-snapshot: every artifact Linux can make, into dist/, from .goreleaser.yaml, versioned from
# git (the last v* tag, else FyneApp.toml's version, plus -snapshot.<commit>), then checked
# (scripts/check-release.sh). release-dist is the same for the v* tag checked out (the release
# workflow). Neither publishes anything.
SYSO_TMP := zz_packaging_rsrc_windows_amd64.syso
RELEASE_BASE_TAG := $(shell git describe --tags --match 'v[0-9]*' --abbrev=0 2>/dev/null || echo v$(shell sed -n 's/^ *Version = "\(.*\)"/\1/p' FyneApp.toml))
release-snapshot: deps-package $(GORELEASER)
	@rm -f $(SYSO_TMP)
	LLAMATRAY_COMMIT=$(COMMIT) GORELEASER_CURRENT_TAG=$(RELEASE_BASE_TAG) $(GORELEASER) release --snapshot --clean || { rm -f $(SYSO_TMP); exit 1; }
	@rm -f $(SYSO_TMP)
	bash scripts/check-release.sh dist
	bash packaging/linux/check-install.sh dist

release-dist: deps-package $(GORELEASER)
	@rm -f $(SYSO_TMP)
	LLAMATRAY_COMMIT=$(COMMIT) $(GORELEASER) release --clean --skip=publish,announce,validate || { rm -f $(SYSO_TMP); exit 1; }
	@rm -f $(SYSO_TMP)
	bash scripts/check-release.sh dist

check-release:
	bash scripts/check-release.sh dist

# build-darwin: the headless server (`llamatray serve`, no tray, no cgo) for macOS on Apple silicon
# and Intel, cross-built here, then vetted for macOS. build-headless: the same for Linux.
HEADLESS := CGO_ENABLED=0 $(GO) build -trimpath -tags headless -ldflags "$(LDFLAGS)"
build-darwin:
	GOOS=darwin GOARCH=arm64 $(HEADLESS) -o build/darwin/llamatray-darwin-arm64 .
	GOOS=darwin GOARCH=amd64 $(HEADLESS) -o build/darwin/llamatray-darwin-amd64 .
	file build/darwin/llamatray-darwin-arm64 | grep -q 'Mach-O 64-bit arm64 executable'
	file build/darwin/llamatray-darwin-amd64 | grep -q 'Mach-O 64-bit x86_64 executable'
	@file build/darwin/llamatray-darwin-*
	$(MAKE) --no-print-directory vet-darwin

vet-darwin:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet -tags headless . ./router/...

vet-windows:
	GOOS=windows GOARCH=amd64 $(GO) vet ./router/...

build-headless:
	GOOS=linux GOARCH=amd64 $(HEADLESS) -o build/headless/llamatray-linux-amd64 .
	GOOS=linux GOARCH=arm64 $(HEADLESS) -o build/headless/llamatray-linux-arm64 .
	@file build/headless/llamatray-linux-*

# lint-workflows: the GitHub Actions workflows with actionlint (shellcheck on their run: steps when
# it is installed).
lint-workflows: deps-package $(ACTIONLINT)
	$(ACTIONLINT) .github/workflows/*.yml

clean:
	rm -rf llamatray dist build
