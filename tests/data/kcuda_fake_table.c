// SPDX-License-Identifier: MIT
/*
 * Shared objects that kernels/cuda/kcuda_load.c must refuse, each with its reason (mk/cuda.mk
 * builds $(B)/tests/kcuda_fake_{abi,size,none}.so; test_exec_gpu_fallback.sh loads them through
 * SPLITNIC_CUDA_LIB): a table of another version, a table of another size, and no table under
 * the name the loader asks for.
 */
#include "kernels/cuda/kcuda.h"

#if defined(KCUDA_FAKE_ABI)
const struct kcuda_ops kcuda_table = {.abi = KCUDA_ABI + 1, .size = sizeof(struct kcuda_ops)};
#elif defined(KCUDA_FAKE_SIZE)
const struct kcuda_ops kcuda_table = {.abi = KCUDA_ABI, .size = sizeof(struct kcuda_ops) - 8};
#else
const struct kcuda_ops kcuda_table_elsewhere = {.abi = KCUDA_ABI, .size = sizeof(struct kcuda_ops)};
#endif
