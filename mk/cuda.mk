# kernels/cuda/: the CUDA executor, optional, loaded only when used. With nvcc ($(NVCC), detected
# in the Makefile) the .cu files build into the shared object $(B)/libsncuda.so (sm_80, sm_90,
# PTX for compute_90; it alone links cuBLAS and cudart). Programs link kernels/cuda/kcuda_dl.c,
# which opens it with dlopen on the first kcuda_* call; without nvcc the same file answers every
# call with "built without CUDA".
#
#   make test-gpu     build and run $(B)/tests/test_cuda alone; fails where no GPU is usable
#                     (for a GPU machine; `make test` skips the GPU cases there instead)

LIBCUDA := $(B)/libsncuda.a
CUDA_SO := $(B)/libsncuda.so
CUDA_LIBDIR ?= $(CUDA_HOME)/lib64
NVCC_GENCODE := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
# -fmad=false: no contraction of a*b+c, so element-wise double ops round like the C kernels
NVCC_FLAGS := -std=c++17 -O3 -g -lineinfo -fmad=false $(NVCC_GENCODE) -I. -D_GNU_SOURCE \
	--Werror all-warnings -Xcompiler -fPIC,-Wall,-Wextra,-Werror,-Wno-unused-parameter \
	$(EXTRA_NVCCFLAGS)

$(B)/kernels/cuda/kcuda_dl.o: MOD_CFLAGS += -DKCUDA_BUILT=$(HAVE_CUDA)

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
$(info cuda: nvcc not found under $(CUDA_HOME): the GPU executor is not built (kcuda_* calls say so))
endif

$(LIBCUDA): $(B)/kernels/cuda/kcuda_dl.o
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^


-include $(CUDA_OBJ:.o=.d) $(B)/kernels/cuda/kcuda_dl.d

test-gpu: $(B)/tests/test_cuda $(CUDA_SO_DEP) models
	$(Q)SPLITNIC_REQUIRE_GPU=1 SPLITNIC_MODEL_DIR=$(B)/models $(B)/tests/test_cuda

.PHONY: test-gpu
