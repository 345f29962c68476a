// SPDX-License-Identifier: MIT
/* What the planner measures of a model before it plans: its ops on this CPU, its NIC suffixes. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/kexec.h"
#include "lab/plan_measure.h"
#include "nicfw/chain.h"
#include "nicfw/emu/emu.h"
#include "split/verbs.h"

#define EMU_WARM 32 /* as splitnic-nic: most warm-up requests to find the steady state */

/*
 * The ops are timed `times` times, GAP_US apart, and the timing whose whole model is fastest is
 * kept: split_tools_measure_ops leaves out the runs inside a slow spell of this machine, but a
 * spell can outlast all its passes (1.5 s), and then every op is priced inside it. Timed once,
 * the CIFAR CNN's ops came to 700.2 us in a bench sweep (2026-11-29) where they measure
 * 392-420 us at every other timing and splitnic-host served them in 487 us: the model put its
 * all-host capacity at 1,263/s against 2,045-2,149/s MEASURED.
 */
#define GAP_US 1000000

int plan_emu_seconds(const struct model *m, uint32_t first, uint32_t executors, double *s,
		     char *err, size_t errlen)
{
	struct nicfw_emu_params ep;
	struct nicfw_emu_report rep;
	struct nicfw_emu *e;
	uint32_t warmed;
	int ret;

	nicfw_emu_params_default(&ep);
	e = nicfw_emu_create(m, first, executors, &ep, err, errlen);
	if (!e)
		return -EINVAL;
	ret = nicfw_emu_serve_prepare(e, m, EMU_WARM, &rep, &warmed, err, errlen);
	nicfw_emu_free(e);
	if (ret < 0)
		return ret;
	*s = rep.latency_us * 1e-6;
	return 0;
}

void plan_measured_free(struct plan_measured *pm)
{
	free(pm->cpu_op_s);
	free(pm->nic_suffix_s);
	memset(pm, 0, sizeof(*pm));
}

int plan_measure(const struct model *m, const struct split_profile *pr, uint32_t rounds,
		 uint32_t times, uint32_t executors, struct plan_measured *out, char *err,
		 size_t errlen)
{
	const uint32_t n = m->n_layers;
	const bool emu = pr->v[SPLIT_P_NIC_EMU] != 0;
	int ret;

	memset(out, 0, sizeof(*out));
	out->n = n;
	out->cpu_op_s = calloc(n, sizeof(double));
	out->nic_suffix_s = calloc(n + 1, sizeof(double));
	if (!out->cpu_op_s || !out->nic_suffix_s) {
		plan_measured_free(out);
		snprintf(err, errlen, "model %s: out of memory", m->name);
		return -ENOMEM;
	}
	for (uint32_t t = 0; t < (times ? times : 1); t++) {
		/* a later timing into nic_suffix_s (filled below), kept when it is faster */
		double *op_s = t ? out->nic_suffix_s : out->cpu_op_s, a = 0, b = 0;

		if (t)
			usleep(GAP_US);
		ret = split_tools_measure_ops(m, rounds, op_s, err, errlen);
		if (ret) {
			plan_measured_free(out);
			return ret;
		}
		for (uint32_t j = 0; t && j < n; j++) {
			a += out->cpu_op_s[j];
			b += op_s[j];
		}
		if (t && b < a)
			memcpy(out->cpu_op_s, op_s, n * sizeof(double));
	}
	if (!executors)
		executors = (uint32_t)pr->v[SPLIT_P_NIC_EXECS];
	for (uint32_t k = n + 1; k-- > 0;) {
		const bool start = k == n || (k ? kexec_nic_handoff_ok(m, k)
						: kexec_can_run(KEXEC_KIND_NIC, m, 0, n));

		out->nic_suffix_s[k] = NAN;
		if (k < n)
			out->cpu_total_s += out->cpu_op_s[k];
		if (!start)
			continue;
		if (k == n) {
			out->nic_suffix_s[k] = 0;
		} else if (emu) {
			ret = plan_emu_seconds(m, k, executors, &out->nic_suffix_s[k], err, errlen);
			if (ret) {
				plan_measured_free(out);
				return ret;
			}
		} else {
			double t = 0;

			for (uint32_t j = k; j < n; j++)
				t += out->cpu_op_s[j];
			out->nic_suffix_s[k] = t;
		}
	}
	return 0;
}
