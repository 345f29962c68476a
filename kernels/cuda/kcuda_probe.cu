// SPDX-License-Identifier: MIT
/* The probe, device information and the error record behind KCUDA_CHECK. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cuda/kcuda_impl.h"

static thread_local char last_msg[512];
static thread_local char last_text[256];
static thread_local int last_code;

static int record(int code, const char *text, const char *call, const char *file, int line)
{
	last_code = code;
	snprintf(last_text, sizeof(last_text), "%s", text);
	snprintf(last_msg, sizeof(last_msg), "%s:%d: %s: %s (%d)", file, line, call, text, code);
	return -EIO;
}

int kcuda_check(cudaError_t e, const char *call, const char *file, int line)
{
	if (e == cudaSuccess)
		return 0;
	return record((int)e, cudaGetErrorString(e), call, file, line);
}

int kcuda_check(cublasStatus_t s, const char *call, const char *file, int line)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return 0;
	return record((int)s, cublasGetStatusString(s), call, file, line);
}

int kcuda_fail(int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	va_end(ap);
	return ret;
}

int kcuda_last_code(void)
{
	return last_code;
}

const char *kcuda_last_text(void)
{
	return last_text;
}

extern "C" const char *kcuda_last_error(void)
{
	return last_msg;
}

struct probe_result {
	int ret;
	char msg[640];
};

/*
 * The kernels are built for sm_80 and sm_90 (and PTX for compute_90, which newer GPUs JIT);
 * the b1 tensor-core MMA needs sm_80 or later, so older GPUs are refused here.
 */
static struct probe_result probe_once(void)
{
	struct probe_result r = {-ENODEV, ""};
	cudaDeviceProp p;
	int n = 0;

	if (KCUDA_CHECK(cudaGetDeviceCount(&n))) {
		snprintf(r.msg, sizeof(r.msg), "no CUDA GPU found: cudaGetDeviceCount: %s (%d)",
			 last_text, last_code);
		return r;
	}
	if (n == 0) {
		snprintf(r.msg, sizeof(r.msg), "no CUDA GPU found: cudaGetDeviceCount: 0 devices");
		return r;
	}
	if (KCUDA_CHECK(cudaGetDeviceProperties(&p, 0))) {
		snprintf(r.msg, sizeof(r.msg),
			 "no usable CUDA GPU: cudaGetDeviceProperties: %s (%d)", last_text,
			 last_code);
		return r;
	}
	if (p.major < 8) {
		snprintf(r.msg, sizeof(r.msg),
			 "no usable CUDA GPU: %s has compute capability %d.%d; the kernels need "
			 "8.0 or later (built for sm_80, sm_90)",
			 p.name, p.major, p.minor);
		return r;
	}
	if (KCUDA_CHECK(cudaFree(0))) {
		snprintf(r.msg, sizeof(r.msg), "no usable CUDA GPU: %s: context creation: %s (%d)",
			 p.name, last_text, last_code);
		return r;
	}
	snprintf(r.msg, sizeof(r.msg), "%s (compute capability %d.%d, %d SMs)", p.name, p.major,
		 p.minor, p.multiProcessorCount);
	r.ret = 0;
	return r;
}

static const struct probe_result *probe(void)
{
	static const struct probe_result r = probe_once();

	return &r;
}

extern "C" int kcuda_probe(char *msg, size_t len)
{
	const struct probe_result *r = probe();

	if (msg && len)
		snprintf(msg, len, "%s", r->msg);
	return r->ret;
}

int kcuda_ready(void)
{
	const struct probe_result *r = probe();

	if (r->ret)
		return kcuda_fail(r->ret, "%s", r->msg);
	return 0;
}

extern "C" int kcuda_device_info(struct kcuda_info *info)
{
	cudaDeviceProp p;
	int ret = kcuda_ready();

	if (ret)
		return ret;
	if (!info)
		return kcuda_fail(-EINVAL, "kcuda_device_info: info is NULL");
	memset(info, 0, sizeof(*info));
	ret = KCUDA_CHECK(cudaGetDeviceProperties(&p, 0));
	if (!ret)
		ret =
		    KCUDA_CHECK(cudaDeviceGetAttribute(&info->clock_khz, cudaDevAttrClockRate, 0));
	if (ret)
		return ret;
	snprintf(info->name, sizeof(info->name), "%s", p.name);
	info->cc_major = p.major;
	info->cc_minor = p.minor;
	info->sm_count = p.multiProcessorCount;
	info->mem_bytes = p.totalGlobalMem;
	return 0;
}
