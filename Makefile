# Convenience targets around CMake. See README.md.

# Debian packages needed to build, test and benchmark (scripts/deps.sh
# installs the missing ones when run as root). clang and libclang-rt-dev
# (its sanitizer and libFuzzer runtimes): the fuzz configuration and
# `make fuzz`; iproute2: `ip`, which brings loopback up in the fuzzer's
# network namespace.
# libmicrohttpd-dev: actorc_http, the metrics endpoint, which the tests and
# the demo use (libactorc itself builds without it); prometheus: promtool,
# which the metrics tests use to validate the exposition; valgrind: the
# test that a terminated system leaves no memory behind; libzmq3-dev and
# libcbor-dev: actorc_remote, remoting over ZeroMQ with CBOR frames;
# libcurl4-openssl-dev and libjansson-dev: actorc_etcd, the etcd client of
# cluster membership; etcd-server: the etcd its tests start; libc-ares-dev:
# the DNS membership provider; dnsmasq-base: the dnsmasq its tests start (the
# binary alone: the package dnsmasq would also run a system-wide DNS server).
# iproute2 and nftables: ip(8) and nft(8), the network namespaces and drop
# rules of the partition tests and benchmark.
# chromium: the headless browser the observer page's test loads it in;
# dpkg-dev, fakeroot and lintian: `make deb` and the packages' test.
DEBIAN_PACKAGES := cmake make gcc libc6-dev pkg-config libcmocka-dev python3 \
                   libmicrohttpd-dev prometheus valgrind libzmq3-dev libcbor-dev \
                   libcurl4-openssl-dev libjansson-dev etcd-server libc-ares-dev dnsmasq-base \
                   clang libclang-rt-dev iproute2 nftables chromium firefox-esr \
                   dpkg-dev fakeroot lintian

BUILD_ROOT  ?= build
RELEASE_DIR := $(BUILD_ROOT)/release
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE       ?= cmake
PREFIX      ?= /usr/local

# What `make demo` runs.
DEMO_BIN    ?= $(RELEASE_DIR)/apps/hedge/actorc-hedge
DEMO_ARGS   ?= --svg $(RELEASE_DIR)/actorc-hedge.svg
BENCH_BIN   ?= $(RELEASE_DIR)/bench/actorc-bench
# Built only with remoting (libzmq and libcbor).
REMOTE_BENCH_BIN ?= $(RELEASE_DIR)/bench/actorc-bench-remote
CLUSTER_BENCH_BIN ?= $(RELEASE_DIR)/bench/actorc-bench-cluster
FAULT_BENCH_BIN ?= $(RELEASE_DIR)/bench/actorc-bench-fault
# What `make demo-cluster` runs: the demo over three replica processes.
DEMO_CLUSTER_ARGS ?= --nodes 3 --svg $(RELEASE_DIR)/actorc-hedge-cluster.svg
# Built only with cluster membership.
MEMBERS_BENCH_BIN ?= $(RELEASE_DIR)/bench/actorc-bench-members
# A cluster of 64 node processes (ACTORC_SCALE_N=16 for a quick run), and
# 1,000 members against one etcd (docs/scaling.md).
SCALE_BENCH_BIN ?= $(RELEASE_DIR)/bench/actorc-bench-scale
MEMBERS_LOAD_BIN ?= $(RELEASE_DIR)/bench/actorc-members-load
# A real partition in network namespaces (root; says so and skips without).
PARTITION_BENCH_BIN ?= $(RELEASE_DIR)/bench/actorc-bench-partition
# What `make soak` runs: DURATION=2h for hours, SEED=0x... to replay a seed.
SOAK_BIN    ?= $(RELEASE_DIR)/apps/soak/actorc-soak
DURATION    ?= 3m
# Where `make deb` puts libactorc0, libactorc-dev and actorc-tools.
DEB_OUT     ?= $(BUILD_ROOT)/packages
# Configurations `make test` builds and tests, in order (scripts/build.sh).
TEST_CONFIGS ?= release asan tsan
# What `make fuzz` runs: the inbound-path fuzzer for FUZZ_TIME seconds, in
# a network namespace of its own, the inputs it keeps into FUZZ_OUT.
FUZZ_TIME   ?= 60
FUZZ_OUT    ?= $(BUILD_ROOT)/fuzz/corpus-node-new

export BUILD_ROOT JOBS CMAKE
MAKEFLAGS += --no-print-directory

.PHONY: all help deps build test fuzz demo demo-cluster bench soak soak-cluster compare install deb clean

all: build

help:
	@echo "make deps     install missing Debian packages (as root) or print the apt-get line"
	@echo "make build    configure and build $(RELEASE_DIR)"
	@echo "make test     build and test: $(TEST_CONFIGS)"
	@echo "make fuzz     build the fuzzers (clang) and fuzz a node's inbound path for FUZZ_TIME=$(FUZZ_TIME) s"
	@echo "make demo     build and run $(DEMO_BIN)"
	@echo "make demo-cluster  the same demo over three actorc-node processes"
	@echo "make bench    build and run the benchmark suite"
	@echo "make soak     build and run the soak for DURATION=$(DURATION) (SEED=... replays one)"
	@echo "make soak-cluster  the cluster chaos soak: 5 node processes, partitions, kills, stops,"
	@echo "              bad links, for DURATION=$(DURATION) (SEED=...; as root in network namespaces)"
	@echo "make compare  compare against other actor runtimes (bench/compare)"
	@echo "make install  install to PREFIX=$(PREFIX)"
	@echo "make deb      build the Debian packages into $(DEB_OUT)"
	@echo "make clean    remove $(BUILD_ROOT)/"

deps:
	@bash scripts/deps.sh $(DEBIAN_PACKAGES)

build: deps
	@bash scripts/build.sh release

test: deps
	@bash scripts/test.sh $(TEST_CONFIGS)

fuzz: deps
	@bash scripts/build.sh fuzz
	@mkdir -p $(FUZZ_OUT)
	cd $(BUILD_ROOT)/fuzz && unshare -rn sh -c 'ip link set lo up && exec tests/remote/fuzz_node \
		-max_total_time=$(FUZZ_TIME) -timeout=60 -jobs=1 $(abspath $(FUZZ_OUT)) $(CURDIR)/tests/remote/corpus-node'
	@echo "fuzz: its log is $(BUILD_ROOT)/fuzz/fuzz-0.log; findings (crash-*, timeout-*) land in $(BUILD_ROOT)/fuzz"

demo: build
	$(DEMO_BIN) $(DEMO_ARGS)

demo-cluster: build
	$(DEMO_BIN) $(DEMO_CLUSTER_ARGS)

bench: build
	$(BENCH_BIN) suite
	$(BENCH_BIN) mem
	@if [ -x $(REMOTE_BENCH_BIN) ]; then echo $(REMOTE_BENCH_BIN); $(REMOTE_BENCH_BIN); \
	else echo "no $(REMOTE_BENCH_BIN) (built without remoting): no remote benchmarks"; fi
	@if [ -x $(CLUSTER_BENCH_BIN) ]; then echo $(CLUSTER_BENCH_BIN); $(CLUSTER_BENCH_BIN); fi
	@if [ -x $(FAULT_BENCH_BIN) ]; then echo $(FAULT_BENCH_BIN); $(FAULT_BENCH_BIN); fi
	@if [ -x $(MEMBERS_BENCH_BIN) ]; then echo $(MEMBERS_BENCH_BIN); $(MEMBERS_BENCH_BIN); \
	else echo "no $(MEMBERS_BENCH_BIN) (built without cluster membership): no membership benchmark"; fi
	@if [ -x $(SCALE_BENCH_BIN) ]; then echo $(SCALE_BENCH_BIN); timeout 600 $(SCALE_BENCH_BIN); fi
	@if [ -x $(MEMBERS_LOAD_BIN) ]; then echo $(MEMBERS_LOAD_BIN) --shared 1000; timeout 600 $(MEMBERS_LOAD_BIN) --shared 1000; fi
	@if [ -x $(PARTITION_BENCH_BIN) ]; then echo $(PARTITION_BENCH_BIN); $(PARTITION_BENCH_BIN); fi

soak: build
	$(SOAK_BIN) --duration $(DURATION) $(if $(SEED),--seed $(SEED)) $(SOAK_ARGS)

soak-cluster: build
	$(SOAK_BIN) --cluster 5 --chaos --duration $(DURATION) $(if $(SEED),--seed $(SEED)) $(SOAK_ARGS)

compare: build
	bench/compare

install: build
	$(CMAKE) --install $(RELEASE_DIR) --prefix $(PREFIX)

deb: deps
	@bash scripts/deb.sh $(DEB_OUT)

clean:
	rm -rf $(BUILD_ROOT)
