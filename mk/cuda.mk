# kernels/cuda/: the CUDA executor, optional, loaded only when used. With nvcc ($(NVCC), detected
# in the Makefile) the .cu files build into the shared object $(B)/libsncuda.so (sm_80, sm_90,
# PTX for compute_90; it alone links cuBLAS and cudart), which exports one symbol, its table
# (kernels/cuda/kcuda.h). Programs link kernels/cuda/kcuda_load.c, which opens it with dlopen
# and takes the table with one dlsym on first use; without nvcc it answers "built without CUDA".
#
#   make test-gpu     build and run $(B)/tests/test_cuda alone; fails where no GPU is usable
#                     (for a GPU machine; `make test` skips the GPU cases there instead)

LIBCUDA := $(B)/libsncuda.a
CUDA_SO := $(B)/libsncuda.so
CUDA_LIBDIR ?= $(CUDA_HOME)/lib64
NVCC_GENCODE := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
# -fmad=false: no contraction of a*b+c, so element-wise double ops round like the C kernels
NVCC_FLAGS := -std=c++20 -O3 -g -lineinfo -fmad=false $(NVCC_GENCODE) -I. -D_GNU_SOURCE \
	--Werror all-warnings -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror,-Wno-unused-parameter \
	$(EXTRA_NVCCFLAGS)

$(B)/kernels/cuda/kcuda_load.o: MOD_CFLAGS += -DKCUDA_BUILT=$(HAVE_CUDA)

ifeq ($(HAVE_CUDA),1)
CUDA_SRC := $(sort $(wildcard kernels/cuda/*.cu))
CUDA_OBJ := $(CUDA_SRC:%.cu=$(B)/%.o)

$(B)/kernels/cuda/%.o: kernels/cuda/%.cu
	$(call say,NVCC,$@)
	@mkdir -p $(@D)
	$(Q)$(NVCC) $(NVCC_FLAGS) -MMD -MP -c $< -o $@

$(CUDA_SO): $(CUDA_OBJ)
	$(call say,LD,$@)
	$(Q)$(CC) -shared -o $@ $^ -Wl,-Bsymbolic -Wl,--no-undefined -L$(CUDA_LIBDIR) \
		-Wl,-rpath,$(CUDA_LIBDIR) -lcublas -lcudart -lstdc++ -lm

all: $(CUDA_SO)
CUDA_SO_DEP := $(CUDA_SO)
else
CUDA_OBJ :=
CUDA_SO_DEP :=
$(info cuda: nvcc not found under $(CUDA_HOME): the GPU executor is not built (kcuda_load says so))
endif

$(LIBCUDA): $(B)/kernels/cuda/kcuda_load.o
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

# Shared objects the loader must refuse (tests/integration/test_exec_gpu_fallback.sh): a table
# of another version, of another size, none under the name it asks for.
KCUDA_FAKES := $(B)/tests/kcuda_fake_abi.so $(B)/tests/kcuda_fake_size.so \
	$(B)/tests/kcuda_fake_none.so
$(B)/tests/kcuda_fake_abi.so: KCUDA_FAKE := -DKCUDA_FAKE_ABI
$(B)/tests/kcuda_fake_size.so: KCUDA_FAKE := -DKCUDA_FAKE_SIZE
$(KCUDA_FAKES): $(B)/tests/kcuda_fake_%.so: tests/data/kcuda_fake_table.c
	$(call say,CCLD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(KCUDA_FAKE) $(DEPFLAGS) -fPIC -shared -o $@ $<

all: $(KCUDA_FAKES)

-include $(CUDA_OBJ:.o=.d) $(B)/kernels/cuda/kcuda_load.d $(KCUDA_FAKES:.so=.d)

test-gpu: $(B)/tests/test_cuda $(CUDA_SO_DEP) models
	$(Q)SPLITNIC_REQUIRE_GPU=1 SPLITNIC_MODEL_DIR=$(B)/models $(B)/tests/test_cuda

.PHONY: test-gpu
