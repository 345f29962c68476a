// SPDX-License-Identifier: MIT
/* The element-wise float32 kernels (kernels/felem.h), compiled for the ref table. */
#define FELEM_NAME kern_felem_ref
#include "kernels/felem_impl.h"

const struct kern_felem *kern_felem_for(const char *isa)
{
	if (!strcmp(isa, "avx512"))
		return &kern_felem_avx512;
	if (!strcmp(isa, "avx2"))
		return &kern_felem_avx2;
	return &kern_felem_ref;
}
