# splitnic — one non-recursive Makefile. Objects under build/, -MMD -MP, V=1 for full commands.
#
#   make deps     install every Debian package the project uses (idempotent)
#   make          build libraries, the splitnic CLI and the tests
#   make test     deps + build + every test
#   make demo     deps + build + the bundled models on Fashion-MNIST
#   make bench    benchmarks (figures also appended to build/bench.jsonl)
#   make fuzz     libFuzzer targets (clang, ASan+UBSan)

.DEFAULT_GOAL := all
.SUFFIXES:
.SECONDEXPANSION:
.DELETE_ON_ERROR:

V ?= 0
ifeq ($(V),0)
Q := @
say = @printf '  %-7s %s\n' $(1) $(2);
else
Q :=
say :=
endif

B := build
CC ?= gcc
ifeq ($(origin CC),default)
CC := gcc
endif
CLANG ?= clang
PKG_CONFIG ?= pkg-config

# --- libraries, all through pkg-config (empty when not installed yet: `make deps` first) -----
pc_cflags = $(shell $(PKG_CONFIG) --cflags $(1) 2>/dev/null)
pc_libs = $(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)

BLAS_CFLAGS := $(call pc_cflags,openblas)
BLAS_LIBS := $(call pc_libs,openblas)
JSON_CFLAGS := $(call pc_cflags,jansson)
JSON_LIBS := $(call pc_libs,jansson)
ZIP_CFLAGS := $(call pc_cflags,libzip)
ZIP_LIBS := $(call pc_libs,libzip)
ZLIB_CFLAGS := $(call pc_cflags,zlib)
ZLIB_LIBS := $(call pc_libs,zlib)
CMOCKA_CFLAGS := $(call pc_cflags,cmocka)
CMOCKA_LIBS := $(call pc_libs,cmocka)

# --- CUDA: detected, optional -----------------------------------------------------------------
CUDA_HOME ?= /usr/local/cuda
NVCC := $(wildcard $(CUDA_HOME)/bin/nvcc)
HAVE_CUDA := $(if $(NVCC),1,0)

# --- flags ------------------------------------------------------------------------------------
WARN := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CSTD := -std=gnu11
OPT ?= -O2 -g
BASE_CFLAGS := $(CSTD) $(OPT) $(WARN) -fno-strict-aliasing -ffp-contract=off -D_GNU_SOURCE -I. $(EXTRA_CFLAGS)
DEPFLAGS = -MMD -MP
LDFLAGS_ALL := -pthread -lm

# ISA-specific kernel files carry their own flags; nothing else gets -march.
FLAGS_avx2 := -mavx2 -mfma -mpopcnt -mbmi2
FLAGS_avx512 := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vpopcntdq -mpopcnt -mbmi2 -mavx2 -mfma
isa_flags = $(if $(findstring _avx512,$(1)),$(FLAGS_avx512),$(if $(findstring _avx2,$(1)),$(FLAGS_avx2)))

# --- modules ----------------------------------------------------------------------------------
# One folder, one archive: $(B)/libsn<module>.a from its objects ($(B)/<folder>/*.o, the tree
# mirrored). The modules with flags or targets of their own have a fragment, mk/<module>.mk,
# which builds its archive the same way, adds its external libraries to MODULE_EXT_LIBS and
# its own targets.
PROTO_SRC := $(sort $(wildcard protocol/*.c))
# model/ is two archives: what loading a model file needs (libsplitnic links only this), and
# what reads and writes the other formats (interchange converter and compiler: jansson, libzip;
# .npy/.npz; IDX datasets; the model file's writer). model/onnx/ is mk/onnx.mk's.
MODEL_SRC := model/model.c model/crc32c.c
CONVERT_SRC := $(filter-out $(MODEL_SRC),$(sort $(wildcard model/*.c)))
KERN_SRC := $(sort $(wildcard kernels/*.c))
EXEC_SRC := $(sort $(wildcard exec/*.c))
SPLIT_SRC := $(sort $(wildcard split/*.c))
SERVE_SRC := $(sort $(wildcard serve/*.c))
LAB_SRC := $(sort $(wildcard lab/*.c))
CLI_SRC := $(filter-out cli/splitnic.c,$(sort $(wildcard cli/*.c)))

LIBPROTO := $(B)/libsnproto.a
LIBMODEL := $(B)/libsnmodel.a
LIBCONVERT := $(B)/libsnconvert.a
LIBKERN := $(B)/libsnkern.a
LIBEXEC := $(B)/libsnexec.a
LIBSPLIT := $(B)/libsnsplit.a
LIBSERVE := $(B)/libsnserve.a
LIBLAB := $(B)/libsnlab.a
LIBCLI := $(B)/libsncli.a
SPLITNIC := $(B)/splitnic

$(LIBPROTO): $(PROTO_SRC:%.c=$(B)/%.o)
$(LIBMODEL): $(MODEL_SRC:%.c=$(B)/%.o)
$(LIBCONVERT): $(CONVERT_SRC:%.c=$(B)/%.o)
$(LIBKERN): $(KERN_SRC:%.c=$(B)/%.o)
$(LIBEXEC): $(EXEC_SRC:%.c=$(B)/%.o)
$(LIBSPLIT): $(SPLIT_SRC:%.c=$(B)/%.o)
$(LIBSERVE): $(SERVE_SRC:%.c=$(B)/%.o)
$(LIBLAB): $(LAB_SRC:%.c=$(B)/%.o)
$(LIBCLI): $(CLI_SRC:%.c=$(B)/%.o)
MODULE_OBJ := $(patsubst %.c,$(B)/%.o,$(PROTO_SRC) $(MODEL_SRC) $(CONVERT_SRC) $(KERN_SRC) $(EXEC_SRC) \
	$(SPLIT_SRC) $(SERVE_SRC) $(LAB_SRC) $(CLI_SRC) cli/splitnic.c)

define archive
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^
endef

$(LIBPROTO) $(LIBMODEL) $(LIBCONVERT) $(LIBKERN) $(LIBEXEC) $(LIBSPLIT) $(LIBSERVE) $(LIBLAB) $(LIBCLI):
	$(archive)

MOD_CFLAGS := $(BLAS_CFLAGS) $(JSON_CFLAGS) $(ZIP_CFLAGS) $(ZLIB_CFLAGS)
# the element-wise float32 kernels are plain C left to the vectoriser (kernels/felem.h)
$(B)/kernels/felem_%.o $(B)/pic/kernels/felem_%.o: MOD_CFLAGS += -O3
MODULE_EXT_LIBS :=

include mk/*.mk

# The archives every program and test links, each before the ones it uses (static linking
# resolves left to right): protocol <- model <- kernels <- exec <- split <- nicfw, serve <- cli,
# lab; lib/ and client/ beside them; conf/ under everything that parses a command line.
PROJECT_LIBS := $(LIBCLI) $(LIBLAB) $(LIBSERVE) $(LIBSNCLIENT) $(LIBSNAPI) $(LIBNICFW) $(LIBXDP) \
	$(LIBSPLIT) $(LIBEXEC) $(LIBKERN) $(LIBCUDA) $(LIBONNX) $(LIBCONVERT) $(LIBMODEL) $(LIBMETRICS) $(LIBCONF) $(LIBPROTO)
EXT_LIBS := $(MODULE_EXT_LIBS) $(JSON_LIBS) $(ZIP_LIBS) $(ZLIB_LIBS) $(BLAS_LIBS) $(LDFLAGS_ALL)

# tests: tests/test_<module>.c, each its own cmocka binary
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_BIN := $(TEST_SRC:tests/%.c=$(B)/tests/%)
TEST_SUPPORT_SRC := $(sort $(wildcard tests/support/*.c))
TEST_SUPPORT_OBJ := $(TEST_SUPPORT_SRC:%.c=$(B)/%.o)

BENCH_SRC := $(sort $(wildcard tests/bench/*.c))
BENCH_BIN := $(BENCH_SRC:tests/bench/%.c=$(B)/bench/%)

ALL_OBJ := $(MODULE_OBJ) $(TEST_SUPPORT_OBJ)

.PHONY: all deps test test-unit test-py demo bench fuzz clean format check-format models

all: $(SPLITNIC) $(TEST_BIN) $(BENCH_BIN)

# --- compile rules ----------------------------------------------------------------------------
$(B)/%.o: %.c
	$(call say,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(MOD_CFLAGS) $(call isa_flags,$<) $(DEPFLAGS) -c $< -o $@

# splitnic --version names the DPDK the servers are built with
SN_DPDK_VERSION := $(shell $(PKG_CONFIG) --modversion libdpdk 2>/dev/null)
$(B)/cli/version.o: MOD_CFLAGS += $(if $(SN_DPDK_VERSION),-DSN_DPDK_VERSION='"$(SN_DPDK_VERSION)"')

$(SPLITNIC): $(B)/cli/splitnic.o $(PROJECT_LIBS)
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $< $(PROJECT_LIBS) $(EXT_LIBS)

$(B)/tests/%: $(B)/tests/%.o $(TEST_SUPPORT_OBJ) $(PROJECT_LIBS)
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $< $(TEST_SUPPORT_OBJ) $(PROJECT_LIBS) $(CMOCKA_LIBS) $(EXT_LIBS) \
		$(LDFLAGS_$(notdir $@))

# test_forward counts every allocation made by project code during a forward pass
LDFLAGS_test_forward := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc \
	-Wl,--wrap=posix_memalign

$(B)/tests/%.o: tests/%.c
	$(call say,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(MOD_CFLAGS) $(CMOCKA_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/bench/%: tests/bench/%.c $(PROJECT_LIBS)
	$(call say,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(MOD_CFLAGS) $(DEPFLAGS) -o $@ $< $(PROJECT_LIBS) $(EXT_LIBS) \
		$(LDFLAGS_$(notdir $@))

-include $(ALL_OBJ:.o=.d) $(TEST_BIN:%=%.d) $(BENCH_BIN:%=%.d)

# --- set-up -----------------------------------------------------------------------------------
# Every Debian package the project uses. Idempotent: apt-get runs only when one is missing.
DEBS := build-essential pkg-config clang llvm lld libclang-rt-14-dev \
	libopenblas-dev libjansson-dev libzip-dev zlib1g-dev libcmocka-dev libinih-dev \
	python3-numpy python3-torch dataset-fashion-mnist \
	libdpdk-dev dpdk dpdk-dev libbpf-dev bpftool libelf-dev libpcap-dev \
	tshark gnuplot-nox python3-scapy iproute2 ethtool kmod procps groff-base systemd \
	libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata python3-onnx \
	ipvsadm keepalived user-mode-linux prometheus time

deps:
	@missing=$$(for p in $(DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
		| grep -q 'install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all $(words $(DEBS)) Debian packages present"; \
	else echo "deps: installing $$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "deps: need root to apt-get install: $$missing" >&2; exit 1; fi; \
		export DEBIAN_FRONTEND=noninteractive; apt-get update -q && \
		apt-get install -y -q --no-install-recommends $$missing; fi

clean:
	rm -rf $(B)

C_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format:
	clang-format -i $(C_FILES)
check-format:
	@clang-format --dry-run --Werror $(C_FILES)

# Objects are intermediate to the archives and the test binaries; keep them between builds.
.SECONDARY: $(ALL_OBJ) $(TEST_BIN:%=%.o)
