// SPDX-License-Identifier: MIT
/* The element-wise float32 kernels (kernels/felem.h), compiled for the avx2 table. */
#define FELEM_NAME kern_felem_avx2
#include "kernels/felem_impl.h"
