# kernels/cuda/: the CUDA executor, optional. With nvcc ($(NVCC), detected in the Makefile) the
# .cu files build into $(B)/libsncuda.a for sm_80 and sm_90 (+ PTX for compute_90); without it
# kernels/cuda/kcuda_none.c implements the same API and every call says "built without CUDA".
#
#   make test-gpu     build and run $(B)/tests/test_cuda alone; fails where no GPU is usable
#                     (for a GPU machine; `make test` skips the GPU cases there instead)

LIBCUDA := $(B)/libsncuda.a
CUDA_LIBDIR ?= $(CUDA_HOME)/lib64
NVCC_GENCODE := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
# -fmad=false: no contraction of a*b+c, so element-wise double ops round like the C kernels
NVCC_FLAGS := -std=c++17 -O3 -g -lineinfo -fmad=false $(NVCC_GENCODE) -I. -D_GNU_SOURCE \
	--Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror,-Wno-unused-parameter \
	$(EXTRA_NVCCFLAGS)

ifeq ($(HAVE_CUDA),1)
CUDA_SRC := $(sort $(wildcard kernels/cuda/*.cu))
CUDA_OBJ := $(CUDA_SRC:%.cu=$(B)/%.o)
MODULE_EXT_LIBS += -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcublas -lcudart -lstdc++

$(B)/kernels/cuda/%.o: kernels/cuda/%.cu
	$(call say,NVCC,$@)
	@mkdir -p $(@D)
	$(Q)$(NVCC) $(NVCC_FLAGS) -MMD -MP -c $< -o $@
else
CUDA_OBJ := $(B)/kernels/cuda/kcuda_none.o
$(info cuda: nvcc not found under $(CUDA_HOME): building the GPU executor as a stub (kernels/cuda/kcuda_none.c))
endif

$(LIBCUDA): $(CUDA_OBJ)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

MODULE_LIBS += $(LIBCUDA)

-include $(CUDA_OBJ:.o=.d)

test-gpu: $(B)/tests/test_cuda models
	$(Q)SPLITNIC_REQUIRE_GPU=1 SPLITNIC_MODEL_DIR=$(B)/models $(B)/tests/test_cuda

.PHONY: test-gpu
