# gpumemsim - see README.md. `make run` and `make test` do everything.
#
#   make            build build/gpumemsim and build/libgpumemsim.a
#   make deps       install missing Debian packages (as root), else print how
#   make deps-record  the recorder's packages too (python3-torch,
#                   python3-torchvision for gpumemsim-record and
#                   tests/test_recorder.py, which skips without them)
#   make test       deps, build, every cmocka test, then again under
#                   AddressSanitizer + UndefinedBehaviorSanitizer
#   make check      the tests, plain build only (and tests/test_recorder.py
#                   with /usr/bin/python3: skipped without torch)
#   make recorded-traces  re-record workloads/traces/recorded/ (torch)
#   make asan       the tests, sanitizer build only (CC=clang: in
#                   build-asan-clang/, with clang's further UBSan checks)
#   make layers     check that sim/ includes nothing above it but
#                   policies/pol.h and workloads/wl.h (part of check)
#   make check-shards  every shipped experiment run whole, as 3 shards
#                   and merged: the sets must be byte-identical
#                   (tests/shard-equality.sh; SHARD_RUNNER=parallel runs
#                   the shards through GNU parallel); about 2 minutes
#   make bench      build and run the engine benchmark
#   make run        deps, build, run configs/experiments/default.yaml and
#                   print where its summary.csv and plot.png are
#   make validate   build the replayer build/validate-gpu (needs nvcc;
#                   cuDNN optional) and, with SCHEDULE=FILE, replay it:
#                   results/validate/measured.csv (MODE=real|spin,
#                   ALLOC=arena|async); without nvcc or a GPU, a message
#                   and exit 0
#   make calibrate  build the CUDA microbenchmarks (build/calibrate-gpu,
#                   needs nvcc; cuDNN optional) and run them: on a GPU,
#                   results/calibrate/measurements.csv fitted into
#                   results/calibrate/profile.yaml; without a GPU or
#                   nvcc, a message and exit 0
#   make measure-gpu  both CUDA programs, then validate/measure-gpu.sh:
#                   calibrate, fit configs/hw/<gpu>-measured.yaml, replay
#                   the validation matrix, time real PyTorch steps
#                   (results/calibration/<gpu>/, results/validation/<gpu>/);
#                   without nvcc or a GPU, a message and exit 0
#   make fuzz       build the libFuzzer harnesses fuzz/<name>.c with clang
#                   (ASan + UBSan) into build-fuzz/ and run each for FUZZ_S
#                   seconds (default 60) from its seed corpus
#                   tests/fixtures/fuzz/<name>/ with fuzz/<name>.dict; new
#                   inputs go to build-fuzz/corpus/<name>/, crashes to
#                   build-fuzz/artifacts/; without clang, a message and exit 0
#   make clean

CC      ?= cc
PKGS    := yaml-0.1 gsl
TESTPKG := cmocka
# coinor-libcbc-dev: the MILP of the `optimal` policy (README, "The
# optimal policy"), pkg-config name cbc
DEBS    := libyaml-dev libgsl-dev libcmocka-dev gnuplot-nox pkg-config parallel \
           coinor-libcbc-dev
# python3-torch, python3-torchvision: gpumemsim-record (README "Recorded
# PyTorch steps") and its test, only (`make deps-record`; make run and
# make test do not need them: the recorder's test skips with a message
# without torch, issue 34); Debian builds them for /usr/bin/python3
RECORD_DEBS := python3-torch python3-torchvision
# the interpreter Debian's torch is built for (a pyenv python3 first on
# PATH has no torch)
PYTORCH_PY ?= /usr/bin/python3

OPT     ?= -O2
WARN    := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wno-missing-field-initializers
DEFS    := -D_POSIX_C_SOURCE=200809L -DGMS_DATADIR='"$(CURDIR)"' \
           -DGMS_VERSION='"$(shell git describe --always --dirty 2>/dev/null || echo unknown)"'
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# CBC (COIN-OR's MILP solver): its headers for the one object that calls
# it (policies/optimal_milp.c), which loads its library with dlopen when
# the `optimal` policy first solves (issue 37: linked, its 15 libraries
# were most of every command's start-up), by the soname of the
# libCbcSolver.so that pkg-config names.
LP_PKG     := cbc
LP_SONAME   = $(shell readelf -d $$(pkg-config --variable=libdir $(LP_PKG) 2>/dev/null)/libCbcSolver.so 2>/dev/null | sed -n 's/.*soname: \[\(.*\)\]/\1/p')
LP_CFLAGS   = $(shell pkg-config --cflags $(LP_PKG) 2>/dev/null) \
              $(if $(LP_SONAME),-DGMS_CBC_SONAME='"$(LP_SONAME)"')
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -ldl
TEST_CFLAGS = $(shell pkg-config --cflags $(TESTPKG) 2>/dev/null)
TEST_LIBS   = $(shell pkg-config --libs $(TESTPKG) 2>/dev/null)

SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# Sources: everything in the engine, the policies, the workloads, the
# experiments and the calibration's C code (fitting, host measurements)
# goes in the library; the programs are the files named *_main.c: the
# command line in cli/ (above every layer), the benchmark in sim/bench/. The
# CUDA microbenchmarks (calibrate/*.cu) are built by `make calibrate` only.
LIB_SRC   := $(filter-out %_main.c,$(wildcard sim/*.c policies/*.c workloads/*.c exp/*.c calibrate/*.c validate/*.c))
TEST_SRC  := $(wildcard tests/test_*.c)
HDRS      := $(wildcard cli/*.h sim/*.h policies/*.h workloads/*.h exp/*.h calibrate/*.h validate/*.h tests/*.h fuzz/*.h)

# The fuzz harnesses (fuzz/<name>.c, README "Fuzzing"): each is linked
# with libFuzzer by `make fuzz` and with the replay driver
# fuzz/replay_main.c by every build tree, so `make check` and `make asan`
# replay the committed corpora and regression inputs without clang.
FUZZ_NAMES := exp workload hw dtr calib sched msr shard wlsim
FUZZ_SEEDS := tests/fixtures/fuzz
FUZZ_S     ?= 60
FUZZ_CC    ?= clang
# the harnesses' scratch files (fuzz/fuzz.h): a file system in memory
# where there is one (on a disk, writing the input costs more than
# parsing it: 560 us against 18 us a write-and-read here)
FUZZ_TMP   ?= $(if $(wildcard /dev/shm),/dev/shm,/tmp)

# $(1) = build dir, $(2) = extra flags
define build_tree
$(1)/obj/%.o: %.c $(HDRS)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(WARN) $$(OPT) -g $$(DEFS) $(2) $$(PKG_CFLAGS) $$(TEST_CFLAGS) -c $$< -o $$@

$(1)/libgpumemsim.a: $(patsubst %.c,$(1)/obj/%.o,$(LIB_SRC))
	@mkdir -p $$(dir $$@)
	rm -f $$@ && ar rcs $$@ $$^

$(1)/gpumemsim: $(1)/obj/cli/gpumemsim_main.o $(1)/libgpumemsim.a
	$$(CC) $(2) -o $$@ $$^ $$(PKG_LIBS) -lpthread -lm

$(1)/tests/%: $(1)/obj/tests/%.o $(1)/libgpumemsim.a
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) -o $$@ $$^ $$(PKG_LIBS) $$(TEST_LIBS) -lpthread -lm

$(1)/fuzz/%-replay: $(1)/obj/fuzz/%.o $(1)/obj/fuzz/fuzz.o $(1)/obj/fuzz/replay_main.o $(1)/libgpumemsim.a
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) -o $$@ $$^ $$(PKG_LIBS) -lpthread -lm
endef

# Replay every harness over its corpus and over the regression inputs
# tests/fixtures/fuzz/regress/<name>* (the harness whose name starts the
# file's); a regression input no harness claims is an error. $(1) = build
# dir, $(2) = environment.
define fuzz_replay
	@set -e; for f in $$(ls $(FUZZ_SEEDS)/regress 2>/dev/null); do \
	  ok=; for n in $(FUZZ_NAMES); do case $$f in $$n*) ok=1;; esac; done; \
	  if [ -z "$$ok" ]; then echo "fuzz: $(FUZZ_SEEDS)/regress/$$f: no harness named by its prefix ($(FUZZ_NAMES))"; exit 1; fi; \
	done; \
	for n in $(FUZZ_NAMES); do printf '== fuzz replay %s: ' $$n; \
	  $(2) $(1)/fuzz/$$n-replay $(FUZZ_SEEDS)/$$n $$(ls -d $(FUZZ_SEEDS)/regress/$$n* 2>/dev/null); done
endef

$(eval $(call build_tree,build,))
# The sanitizer tree: build-asan, or build-asan-clang for CC=clang (its
# UBSan checks more), so that the two compilers' objects never mix.
ASAN_DIR := build-asan$(if $(findstring clang,$(CC)),-clang)
$(eval $(call build_tree,$(ASAN_DIR),$(SAN)))
# The serial DTR replay's region walks (README, "The dtr policy (serial
# preset)"): -O3 is about 15% faster there than -O2 (make bench, dtr).
build/obj/policies/dtr_serial.o: OPT = -O3
# CBC's headers only where it is called
build/obj/policies/optimal_milp.o $(ASAN_DIR)/obj/policies/optimal_milp.o build-fuzz/obj/policies/optimal_milp.o: PKG_CFLAGS += $(LP_CFLAGS)

TESTS      := $(patsubst tests/%.c,build/tests/%,$(TEST_SRC))
ASAN_TESTS := $(patsubst tests/%.c,$(ASAN_DIR)/tests/%,$(TEST_SRC))
REPLAYS      := $(patsubst %,build/fuzz/%-replay,$(FUZZ_NAMES))
ASAN_REPLAYS := $(patsubst %,$(ASAN_DIR)/fuzz/%-replay,$(FUZZ_NAMES))

.PHONY: all deps deps-record test check check-shards asan layers bench run gpu-tools calibrate validate measure-gpu fuzz clean recorded-traces
.SECONDARY:
.DEFAULT_GOAL := all

all: build/gpumemsim build/libgpumemsim.a build/gpumemsim-record

build/gpumemsim-record: cli/gpumemsim_record.py
	@mkdir -p build
	install -m 755 $< $@

# Re-record the shipped logs of workloads/traces/recorded/ (a few seconds
# to a minute each on a CPU; torch 1.13 from Debian)
RECORD = $(PYTORCH_PY) cli/gpumemsim_record.py
recorded-traces:
	$(RECORD) --model torchvision:resnet50 --input 2,3,224,224 -o workloads/traces/recorded/resnet50-2-recorded.log
	$(RECORD) --model torchvision:vgg16 --input 2,3,224,224 -o workloads/traces/recorded/vgg16-2-recorded.log
	$(RECORD) --model torchvision:densenet121 --input 2,3,224,224 -o workloads/traces/recorded/densenet121-2-recorded.log
	$(RECORD) --model nn:transformer_encoder:2:256:4 --input 64,4,256 --batch-dim 1 --loss mse -o workloads/traces/recorded/transformer_encoder-4-recorded.log
	$(RECORD) --model workloads/traces/recorded/gpt2_tiny.py:make_model --input 2,32 --input-dtype int64 --vocab 1000 -o workloads/traces/recorded/gpt2tiny-2-recorded.log
	$(RECORD) --model workloads/traces/recorded/llama_tiny.py:make_model --input 2,64 --input-dtype int64 --vocab 4096 -o workloads/traces/recorded/llamatiny-2-recorded.log

# Install the Debian packages $(1) that are missing (as root), else say how.
define install_debs
missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "installing:$$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing \
	  || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; }; \
	else \
	  echo "missing packages:$$missing"; \
	  echo "run as root:  apt-get install -y$$missing"; exit 1; \
	fi
endef

deps:
	@$(call install_debs,$(DEBS))

deps-record:
	@$(call install_debs,$(DEBS) $(RECORD_DEBS))

# The layering (README, "How it works"): the engine's library code in sim/
# includes from above it only the policy interface (policies/pol.h) and
# the workload model (workloads/wl.h); the command line is in cli/.
layers:
	@bad=$$(grep -n '#include "\.\./' sim/*.c sim/*.h | \
	  grep -v -e '"\.\./policies/pol\.h"' -e '"\.\./workloads/wl\.h"'); \
	if [ -n "$$bad" ]; then echo "layers: sim/ includes a layer above it:"; \
	  echo "$$bad"; exit 1; fi; echo "layers: sim/ depends on nothing above it"

# Each test binary runs from the repository root (fixtures are found
# relative to it). A failing test stops the run with its name.
check: deps layers $(TESTS) build/gpumemsim build/gpumemsim-record $(REPLAYS)
	@set -e; k=0; for t in $(TESTS); do k=$$((k+1)); \
	  echo "== [$$k/$(words $(TESTS))] $$t"; $$t; done; \
	echo "all $(words $(TESTS)) test programs passed"
	@echo "== tests/test_recorder.py"; $(PYTORCH_PY) tests/test_recorder.py
	$(call fuzz_replay,build,)

# CC=clang works too (in build-asan-clang/): clang's UBSan checks more
# (float-to-int overflow, arithmetic on a null pointer).
asan: deps $(ASAN_TESTS) $(ASAN_DIR)/gpumemsim $(ASAN_REPLAYS)
	@set -e; k=0; for t in $(ASAN_TESTS); do k=$$((k+1)); \
	  echo "== [$$k/$(words $(ASAN_TESTS))] $$t"; \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 $$t; done; \
	echo "all $(words $(ASAN_TESTS)) test programs passed under ASan+UBSan"
	$(call fuzz_replay,$(ASAN_DIR),ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1)

# Sharded-and-merged equals unsharded for every shipped experiment
# (make test runs a cheaper selection: tests/test_shard.c).
check-shards: deps build/gpumemsim
	BIN=build/gpumemsim tests/shard-equality.sh

test: deps
	$(MAKE) check
	$(MAKE) asan

bench: deps build/gpumemsim-bench
	./build/gpumemsim-bench

build/gpumemsim-bench: build/obj/sim/bench/bench_main.o build/libgpumemsim.a
	$(CC) -o $@ $^ $(PKG_LIBS) -lpthread -lm

# The default experiment (configs/experiments/default.yaml): framework
# against ondemand on ResNet-50 as the device budget shrinks. Writes
# results/default/{summary.csv,runs.json,plot.png,plot.svg} and prints
# their paths.
run: deps all
	./build/gpumemsim run configs/experiments/default.yaml

# The GPU calibration. nvcc from PATH or $(CUDA_HOME); cuDNN found beside
# it or in /usr/include, else the convolution benchmark is compiled out.
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(shell command -v nvcc 2>/dev/null || echo $(CUDA_HOME)/bin/nvcc)
CUDNN     := $(if $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h),-DGMS_HAVE_CUDNN -lcudnn)
CAL_OUT   ?= results/calibrate

# Both CUDA programs, built by `make calibrate`, `make validate` and `make
# measure-gpu` (GPU_ARCH: extra nvcc flags, e.g. "-arch=sm_90" to build
# machine code for a Hopper GPU on a machine without one; default: nvcc's
# own target plus PTX, compiled for the GPU when first loaded).
GPU_ARCH  ?=
NVCC_CMD   = "$(NVCC)" -O2 -std=c++17 $(GPU_ARCH)

gpu-tools: all
	@if [ ! -x "$(NVCC)" ]; then \
	  echo "gpu-tools: nvcc not found ($(NVCC)); the CUDA toolkit is needed to build"; \
	  echo "gpu-tools: build/calibrate-gpu and build/validate-gpu - nothing built."; \
	  echo "gpu-tools: Host calibration works anywhere: build/gpumemsim calibrate --host -o PROFILE.yaml;"; \
	  echo "gpu-tools: the replay core is tested on the host by make test (tests/test_replay.c)"; exit 0; fi; \
	if [ -z "$(CUDNN)" ]; then \
	  echo "gpu-tools: cuDNN not found: no convolution benchmark, and the replay runs"; \
	  echo "gpu-tools: convolutions as memory-bound kernels"; fi; \
	echo "$(NVCC_CMD) -o build/calibrate-gpu calibrate/gpu_bench.cu -lcublas $(CUDNN)"; \
	$(NVCC_CMD) -o build/calibrate-gpu calibrate/gpu_bench.cu -lcublas $(CUDNN) || exit 1; \
	echo "$(NVCC_CMD) -o build/validate-gpu validate/validate_gpu.cu build/libgpumemsim.a -lcublas $(CUDNN) $(PKG_LIBS) -lpthread -lm"; \
	$(NVCC_CMD) -o build/validate-gpu validate/validate_gpu.cu build/libgpumemsim.a \
	  -lcublas $(CUDNN) $(PKG_LIBS) -lpthread -lm || exit 1

calibrate: gpu-tools
	@[ -x "$(NVCC)" ] || exit 0; \
	mkdir -p $(CAL_OUT); rm -f $(CAL_OUT)/measurements.csv; \
	./build/calibrate-gpu -o $(CAL_OUT)/measurements.csv || exit 1; \
	if [ -f $(CAL_OUT)/measurements.csv ]; then \
	  ./build/gpumemsim fit $(CAL_OUT)/measurements.csv -o $(CAL_OUT)/profile.yaml; \
	fi

# The replayer (README, "Validating on a GPU"): the scheduling core and its
# host backend are library code (validate/*.c, covered by `make test`);
# the CUDA backend and program are built here only, like calibrate's.
VAL_OUT   ?= results/validate
MODE      ?= real
ALLOC     ?= arena

validate: gpu-tools
	@[ -x "$(NVCC)" ] || exit 0; \
	if [ -n "$(SCHEDULE)" ]; then \
	  mkdir -p $(VAL_OUT); \
	  ./build/validate-gpu "$(SCHEDULE)" -o $(VAL_OUT)/measured.csv --mode $(MODE) --alloc $(ALLOC) || exit 1; \
	else \
	  echo "validate: built build/validate-gpu; replay with"; \
	  echo "validate:   make validate SCHEDULE=FILE [MODE=real|spin] [ALLOC=arena|async]"; \
	fi

# Measure a GPU in one run (README, "Measuring a GPU"): calibrate, fit
# configs/hw/<gpu>-measured.yaml, replay the validation matrix, time real
# PyTorch steps; without nvcc or a GPU, a message and exit 0.
measure-gpu: gpu-tools
	@[ -x "$(NVCC)" ] || exit 0; sh validate/measure-gpu.sh build

# libFuzzer (clang only): the library and harnesses built with
# -fsanitize=fuzzer-no-link,address,undefined in build-fuzz/, one binary
# per harness, run one after the other, each in-process on one core.
FUZZ_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_OBJ   := $(patsubst %.c,build-fuzz/obj/%.o,$(LIB_SRC) fuzz/fuzz.c)

build-fuzz/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(WARN) -O1 -g $(DEFS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(PKG_CFLAGS) -c $< -o $@

build-fuzz/%: build-fuzz/obj/fuzz/%.o $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) -lpthread -lm

fuzz: deps
	@if ! command -v $(FUZZ_CC) >/dev/null 2>&1; then \
	  echo "fuzz: $(FUZZ_CC) not found; libFuzzer needs clang - nothing built"; \
	  echo "fuzz: (make test still replays the corpora with the replay driver)"; exit 0; fi; \
	$(MAKE) $(patsubst %,build-fuzz/%,$(FUZZ_NAMES)) && \
	for n in $(FUZZ_NAMES); do \
	  mkdir -p build-fuzz/corpus/$$n build-fuzz/artifacts; \
	  echo "== fuzz $$n for $(FUZZ_S) s"; \
	  TMPDIR=$(FUZZ_TMP) ./build-fuzz/$$n -max_total_time=$(FUZZ_S) -timeout=10 \
	    -rss_limit_mb=2048 -print_final_stats=1 -dict=fuzz/$$n.dict \
	    -artifact_prefix=build-fuzz/artifacts/$$n- \
	    build-fuzz/corpus/$$n $(FUZZ_SEEDS)/$$n || exit 1; \
	done

clean:
	rm -rf build build-asan build-asan-clang build-fuzz
