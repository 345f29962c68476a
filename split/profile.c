// SPDX-License-Identifier: MIT
/* Calibration profiles: the parameter table, defaults, and the key = value file. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dpdk/idle_policy.h"
#include "protocol/proto.h"
#include "split/split.h"

static const struct {
	struct split_pkey_info info;
	double def;
} ptab[SPLIT_P__COUNT] = {
    [SPLIT_P_CPU_OP] = {{"cpu.op_s", "s", "fixed cost of one CPU op (dispatch, cache misses)"},
			1e-6},
    [SPLIT_P_CPU_F64_MACS] = {{"cpu.f64_macs", "MAC/s", "float64 conv/dense (OpenBLAS, 1 thread)"},
			      8e9},
    [SPLIT_P_CPU_BIN_OPS] = {{"cpu.bin_ops", "bit-op/s", "binary dense/conv on packed bits"}, 2e11},
    [SPLIT_P_CPU_U8_OPS] = {{"cpu.u8_ops", "MAC/s", "binary dense on u8 input (bit-planes)"}, 2e10},
    [SPLIT_P_CPU_ELEM] = {{"cpu.elem", "elem/s", "element-wise ops (cast, bn, sign, pool, ...)"},
			  5e8},
    [SPLIT_P_CPU_CACHE] = {{"cpu.cache_bytes", "B", "weights up to this stay in cache"}, 8e6},
    [SPLIT_P_CPU_BW_CACHE] = {{"cpu.bw_cache", "B/s", "weight streaming from cache"}, 5e10},
    [SPLIT_P_CPU_BW_DRAM] = {{"cpu.bw_dram", "B/s", "weight streaming from DRAM"}, 1e10},
    [SPLIT_P_GPU_PRESENT] = {{"gpu.present", "0/1", "a usable CUDA GPU (kcuda_open)"}, 0},
    [SPLIT_P_GPU_OP] = {{"gpu.op_s", "s", "launch cost of one GPU op"}, 8e-6},
    [SPLIT_P_GPU_F64_MACS] = {{"gpu.f64_macs", "MAC/s", "float64 conv/dense (cuBLAS)"}, 5e12},
    [SPLIT_P_GPU_BIN_OPS] = {{"gpu.bin_ops", "bit-op/s", "binary dense/conv"}, 5e13},
    [SPLIT_P_GPU_ELEM] = {{"gpu.elem", "elem/s", "element-wise ops"}, 5e10},
    [SPLIT_P_GPU_BW] = {{"gpu.bw", "B/s", "device memory bandwidth"}, 2e12},
    [SPLIT_P_GPU_MEM] = {{"gpu.mem_bytes", "B", "device memory for weights"}, 16e9},
    [SPLIT_P_GPU_STAGE] = {{"gpu.stage_s", "s", "fixed cost of a GPU stage (stream sync)"}, 1e-5},
    [SPLIT_P_PCIE_BW] = {{"pcie.bw", "B/s", "host <-> GPU copies (pinned)"}, 2e10},
    [SPLIT_P_PCIE_LAT] = {{"pcie.lat_s", "s", "per host <-> GPU copy"}, 1e-5},
    [SPLIT_P_NIC_LAYER] = {{"nic.layer_s", "s",
			    "per binary layer on the NIC chain (emulator fit; seed: 400 us at "
			    "4096x2048)"},
			   7.1e-5},
    [SPLIT_P_NIC_NWORD] = {{"nic.nword_s", "s", "per neuron x 64-bit input word (emulator fit)"},
			   2.5e-9},
    [SPLIT_P_NIC_NEURON] = {{"nic.neuron_s", "s", "per neuron (emulator fit)"}, 0},
    [SPLIT_P_NIC_STAGE] = {{"nic.stage_s", "s",
			    "fixed per request: packet rx + tx + finish (seed: 35 us rx+tx)"},
			   3.5e-5},
    [SPLIT_P_NIC_MEM] = {{"nic.mem_bytes", "B",
			  "EMEM DRAM for weights: 2 GiB (Agilio CX NFP4000 board); the "
			  "emulator's EMEM cache sets speed, not capacity"},
			 2147483648.0},
    [SPLIT_P_LINK_GBPS] = {{"link.gbps", "Gbit/s", "host <-> NIC link"}, 10},
    [SPLIT_P_LINK_PKT] = {{"link.pkt_s", "s", "per datagram: descriptors, doorbell, DMA set-up"},
			  1e-6},
    [SPLIT_P_LINK_OVERHEAD] = {{"link.overhead_bytes", "B",
				"per datagram on the wire: Ethernet 14+4 + preamble/IFG 20 + IPv4 "
				"20 + UDP 8"},
			       66},
    [SPLIT_P_PAYLOAD] = {{"link.payload", "B", "UDP payload per datagram"}, 1400},
    [SPLIT_P_SER_PKT] = {{"ser.pkt_s", "s", "build one datagram (proto_frag_next)"}, 1e-7},
    [SPLIT_P_SER_BYTE] = {{"ser.byte_s", "s", "per data byte serialized"}, 1e-10},
    [SPLIT_P_DESER_PKT] = {{"deser.pkt_s", "s", "parse + reassemble one datagram"}, 2e-7},
    [SPLIT_P_DESER_BYTE] = {{"deser.byte_s", "s", "per data byte reassembled"}, 1e-10},
    [SPLIT_P_PACK_ELEM] = {{"pack.elem_s", "s", "per element: bits to/from the wire order"}, 2e-9},
    [SPLIT_P_QUANT_ELEM] = {{"quant.elem_s", "s", "per element: f64 -> f32/fp16/int8 and back"},
			    2e-9},
    [SPLIT_P_PATH_FIXED] = {{"path.fixed_s", "s",
			     "packet path: a request's round trip outside every server (front-end "
			     "socket, wire, the NIC passing it up and the answer out)"},
			    5e-5},
    [SPLIT_P_PATH_NIC] = {{"path.nic_s", "s",
			   "packet path: the same for a request the NIC answers alone "
			   "(stand-alone), outside its chain"},
			  3e-5},
    [SPLIT_P_HOST_REQ] = {{"host.req_s", "s",
			   "packet path: the host core per request of one message each way "
			   "(receive, admit, answer or hand off); half of it per message in or "
			   "out (REQUEST, RESPONSE, ACTIVATION, notice)"},
			  1e-5},
    [SPLIT_P_HOST_QUEUE] = {{"host.queue", "req", "packet path: splitnic-host --queue"}, 64},
    [SPLIT_P_NIC_WINDOW] = {{"nic.window", "req", "packet path: splitnic-host --nic-window"}, 32},
    [SPLIT_P_LINK_LIMIT] =
	{{"link.limit_bytes", "B",
	  "packet path: the host <-> NIC link's queue (tc tbf limit: 1,000 full frames)"},
	 1514000},
    [SPLIT_P_LINK_BURST] = {{"link.burst_bytes", "B",
			     "packet path: a token bucket's depth on the link (tc tbf burst; 0: a "
			     "plain wire, every frame takes its bytes / rate)"},
			    0},
    [SPLIT_P_HOST_SCALE] = {{"host.scale", "x",
			     "packet path: host core time per second of the ops' in-process "
			     "time (the stage's compute as served)"},
			    1},
    [SPLIT_P_NIC_SCALE] = {{"nic.scale", "x",
			    "packet path: NIC stage time per second of its chain's own time (emu: "
			    "modeled; lcore: in process)"},
			   1},
    [SPLIT_P_NIC_EXECS] = {{"nic.executors", "exec", "the NIC's chain: splitnic-nic --executors"},
			   16},
    [SPLIT_P_NIC_EMU] = {{"nic.emu", "0/1",
			  "the NIC's platform is emu (its chain's time is the emulator's model)"},
			 1},
    [SPLIT_P_SYS_S] = {{"sys.s", "s",
			"packet path: the machine's work per request outside every stage's "
			"compute (1 / the capacity of a model without compute), 4 frames"},
		       1e-5},
    [SPLIT_P_PATH_COPROC] = {{"path.coproc_s", "s+-",
			      "packet path: what a co-processor request adds to path.fixed_s "
			      "beyond the NIC's stage (the ACTIVATION's hop, the notice)"},
			     0},
    [SPLIT_P_CAL_TIME] = {{"cal.time", "epoch",
			   "when the packet path was calibrated (s since 1970; 0: never)"},
			  0},
    [SPLIT_P_CAL_SPREAD] = {{"cal.spread", "x",
			     "the calibration's spread: the largest relative range of a figure "
			     "over its rounds"},
			    0},
    [SPLIT_P_POLL_WAKE] = {{"poll.wake_s", "s",
			    "how late a sleeping lcore wakes: a timed sleep's median lateness "
			    "on this machine (calibrate --packet measures it)"},
			   5e-5},
    [SPLIT_P_POLL_HOST] = {{"poll.host_sleep_s", "s",
			    "splitnic-host's longest idle sleep (--idle-sleep-us; 0: --poll "
			    "busy): its adaptive polling's wake-ups are in the model"},
			   DPDK_IDLE_DEFAULT_US * 1e-6},
    [SPLIT_P_POLL_NIC] = {{"poll.nic_sleep_s", "s",
			   "splitnic-nic's longest idle sleep (--idle-sleep-us; 0: --poll busy)"},
			  DPDK_IDLE_DEFAULT_US * 1e-6},
    [SPLIT_P_HOST_CURVE] =
	{{"host.curve_s", "s",
	  "the calibration's host series' service: a host stage up to it takes the host "
	  "curves in its own service, a longer one adds its own queue (M/D/1) "
	  "beyond them (0: every stage in its own, a profile from before)"},
	 0},
    [SPLIT_P_SYS_FRAMES] = {{"sys.frames_exp", "x",
			     "packet path: the path's wait for a request of F frames is "
			     "sys.s x (F / 4)^this x the sys curve at its utilisation (1: in "
			     "proportion; calibrate --packet measures it)"},
			    1},
    [SPLIT_P_SYS_FRAME] = {{"sys.frame_s", "s+-",
			    "packet path: the path's work for each frame of a request beyond "
			    "sys.s's 4 (< 0: sys.s / 4, in proportion; calibrate --packet measures "
			    "it from a second model without compute, of 18 frames)"},
			   -1},
};

static const struct split_pkey_info ctab[SPLIT_CV__COUNT] = {
    [SPLIT_CV_SYS_P50] = {"curve.sys.p50", "x s", "the path's p50 beyond its no-load time"},
    [SPLIT_CV_SYS_P99] = {"curve.sys.p99", "x s", "the path's p99 beyond its no-load time"},
    [SPLIT_CV_SYS_ANS] = {"curve.sys.answered", "share", "requests the path answers"},
    [SPLIT_CV_HOST_P50] = {"curve.host.p50", "x s", "the host core's p50 beyond its compute"},
    [SPLIT_CV_HOST_P99] = {"curve.host.p99", "x s", "the host core's p99 beyond its compute"},
    [SPLIT_CV_HOST_ANS] = {"curve.host.answered", "share", "requests the host's queue takes"},
    [SPLIT_CV_NIC_P50] = {"curve.nic.p50", "x s", "the NIC stage's p50 beyond its chain"},
    [SPLIT_CV_NIC_P99] = {"curve.nic.p99", "x s", "the NIC stage's p99 beyond its chain"},
    [SPLIT_CV_NIC_FB] = {"curve.nic.fallback", "share",
			 "requests the NIC's window (stand-alone: its queue) turns away"},
};

static const struct split_pkey_info grid_info = {
    "curve.u", "rho", "utilisations the curves are measured at (increasing)"};

static const double grid_default[] = {0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 1.0, 1.2, 1.5};

/* A full queue of this many requests ahead: the default curves' wait past saturation. */
#define CURVE_FULL 63.0

/* The default curves (no calibration): M/D/1's mean wait for a p50, M/M/1's for a p99 (in
 * service times), bounded by a full queue; past saturation the fluid shares. */
static double curve_default(unsigned c, double u)
{
	switch (c) {
	case SPLIT_CV_SYS_ANS:
	case SPLIT_CV_HOST_ANS:
		return u < 1 ? 1 : 1 / u;
	case SPLIT_CV_NIC_FB:
		return u < 1 ? 0 : 1 - 1 / u;
	case SPLIT_CV_SYS_P99:
	case SPLIT_CV_HOST_P99:
	case SPLIT_CV_NIC_P99:
		return u >= 1	  ? CURVE_FULL
		       : u > 0.01 ? fmin(CURVE_FULL, log(100 * u) / (1 - u))
				  : 0;
	default:
		return u >= 1 ? CURVE_FULL : fmin(CURVE_FULL, u / (2 * (1 - u)));
	}
}

static void curves_default(struct split_profile *p)
{
	for (unsigned c = 0; c < SPLIT_CV__COUNT; c++)
		for (uint32_t i = 0; i < p->n_grid; i++)
			p->curve[c][i] = curve_default(c, p->grid[i]);
}

void split_profile_default(struct split_profile *p)
{
	memset(p, 0, sizeof(*p));
	for (unsigned k = 0; k < SPLIT_P__COUNT; k++)
		p->v[k] = ptab[k].def;
	p->n_grid = sizeof(grid_default) / sizeof(grid_default[0]);
	memcpy(p->grid, grid_default, sizeof(grid_default));
	curves_default(p);
}

const struct split_pkey_info *split_curve_info(unsigned c)
{
	return c < SPLIT_CV__COUNT ? &ctab[c] : NULL;
}

static bool curve_is_share(unsigned c)
{
	return c == SPLIT_CV_SYS_ANS || c == SPLIT_CV_HOST_ANS || c == SPLIT_CV_NIC_FB;
}

double split_curve_at(const struct split_profile *p, unsigned c, double u)
{
	const uint32_t n = p->n_grid;
	const double *g = p->grid, *y = p->curve[c];
	double last;

	if (!n || !(u > g[0]))
		return n ? y[0] : 0;
	for (uint32_t i = 1; i < n; i++)
		if (u <= g[i])
			return y[i - 1] + (y[i] - y[i - 1]) * (u - g[i - 1]) / (g[i] - g[i - 1]);
	last = y[n - 1];
	if (c == SPLIT_CV_NIC_FB)
		return 1 - (1 - last) * g[n - 1] / u;
	return curve_is_share(c) ? last * g[n - 1] / u : last;
}

const struct split_pkey_info *split_pkey_info(unsigned k)
{
	return k < SPLIT_P__COUNT ? &ptab[k].info : NULL;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = 0;
	return s;
}

/* Line length of a profile (a longer line is an error, not two lines). */
#define PROFILE_LINE_MAX 512
/* Largest size in bytes: integers held exactly in a double, converted to u64 by the planner. */
#define PROFILE_BYTES_MAX 9007199254740992.0 /* 2^53 */

/*
 * The range of key k's value, from its unit: times 0..1 hour, rates 1e-6..1e18 per second (a
 * zero rate would divide by zero), sizes whole bytes up to 2^53, flags 0 or 1, queue lengths whole
 * requests 1..1e6; the datagram payload must hold an ACTIVATION header and a fragment and fit a UDP
 * datagram.
 */
static void value_range(unsigned k, double *min, double *max, bool *whole)
{
	const char *u = ptab[k].info.unit;

	*whole = !strcmp(u, "B") || !strcmp(u, "0/1") || !strcmp(u, "req") || !strcmp(u, "exec");
	if (k == SPLIT_P_PAYLOAD) {
		*min = PROTO_ACT_HDR_LEN + PROTO_FRAG_ALIGN;
		*max = PROTO_MAX_PAYLOAD;
	} else if (!strcmp(u, "req")) {
		*min = 1;
		*max = 1e6;
	} else if (!strcmp(u, "0/1")) {
		*min = 0;
		*max = 1;
	} else if (!strcmp(u, "B")) {
		*min = 0;
		*max = PROFILE_BYTES_MAX;
	} else if (!strcmp(u, "s")) {
		*min = 0;
		*max = 3600;
	} else if (!strcmp(u, "s+-")) {
		*min = -1;
		*max = 1;
	} else if (!strcmp(u, "exec")) {
		*min = 1;
		*max = 256;
	} else if (!strcmp(u, "x")) {
		*min = 0;
		*max = 1000;
	} else if (!strcmp(u, "epoch")) {
		*min = 0;
		*max = 1e11;
	} else {
		*min = 1e-6;
		*max = 1e18;
	}
}

/* Seen flags of a profile's keys: the scalars, the curves, then the grid. */
#define SEEN_COUNT (SPLIT_P__COUNT + SPLIT_CV__COUNT + 1)

/*
 * A list key: curve.u (1..SPLIT_GRID_MAX utilisations in (0, 10], increasing; the curves not
 * given yet take their defaults at them), or curve c (one value per utilisation, after
 * curve.u if that is given: a p50/p99 in 0..1e5 service times, a share in 0..1).
 */
static int curve_line(const char *label, unsigned lineno, unsigned c, char *val,
		      struct split_profile *p, const bool *seen, char *err, size_t errlen)
{
	const bool grid = c == SPLIT_CV__COUNT;
	const char *key = grid ? grid_info.key : ctab[c].key;
	double v[SPLIT_GRID_MAX + 1];
	uint32_t n = 0;
	char *end;

	while (*val && n <= SPLIT_GRID_MAX) {
		v[n] = strtod(val, &end);
		if (end == val || (*end && *end != ' ' && *end != '\t') || !isfinite(v[n]))
			break;
		n++;
		val = end;
		while (*val == ' ' || *val == '\t')
			val++;
	}
	if (*val || !n || n > SPLIT_GRID_MAX) {
		snprintf(err, errlen, "%s:%u: %s: 1 to %d numbers separated by spaces expected",
			 label, lineno, key, SPLIT_GRID_MAX);
		return -EINVAL;
	}
	if (grid) {
		for (unsigned k = 0; k < SPLIT_CV__COUNT; k++)
			if (seen[SPLIT_P__COUNT + k]) {
				snprintf(err, errlen, "%s:%u: curve.u after %s (give it first)",
					 label, lineno, ctab[k].key);
				return -EINVAL;
			}
		for (uint32_t i = 0; i < n; i++)
			if (!(v[i] > (i ? v[i - 1] : 0)) || v[i] > 10) {
				snprintf(err, errlen,
					 "%s:%u: curve.u: increasing utilisations in (0, 10] "
					 "expected",
					 label, lineno);
				return -EINVAL;
			}
		p->n_grid = n;
		memcpy(p->grid, v, n * sizeof(v[0]));
		curves_default(p);
		return 0;
	}
	if (n != p->n_grid) {
		snprintf(err, errlen,
			 "%s:%u: %s: %u values expected (one per curve.u point), got %u", label,
			 lineno, key, p->n_grid, n);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!(v[i] >= 0) || v[i] > (curve_is_share(c) ? 1 : 1e5)) {
			snprintf(err, errlen, "%s:%u: %s: values in 0..%s expected", label, lineno,
				 key, curve_is_share(c) ? "1" : "1e5");
			return -EINVAL;
		}
	memcpy(p->curve[c], v, n * sizeof(v[0]));
	return 0;
}

static int profile_line(const char *label, unsigned lineno, char *line, struct split_profile *p,
			bool *seen, char *err, size_t errlen)
{
	char *hash = strchr(line, '#'), *eq, *key, *val, *end;
	double v, min, max;
	bool whole;
	unsigned k;

	if (hash)
		*hash = 0;
	key = trim(line);
	if (!*key)
		return 0;
	eq = strchr(key, '=');
	if (!eq) {
		snprintf(err, errlen, "%s:%u: expected key = value", label, lineno);
		return -EINVAL;
	}
	*eq = 0;
	key = trim(key);
	val = trim(eq + 1);
	for (k = 0; k < SPLIT_P__COUNT; k++)
		if (!strcmp(key, ptab[k].info.key))
			break;
	if (k == SPLIT_P__COUNT) {
		for (unsigned c = 0; c <= SPLIT_CV__COUNT; c++)
			if (!strcmp(key, c < SPLIT_CV__COUNT ? ctab[c].key : grid_info.key)) {
				if (seen[SPLIT_P__COUNT + c]) {
					snprintf(err, errlen, "%s:%u: %s given twice", label,
						 lineno, key);
					return -EINVAL;
				}
				seen[SPLIT_P__COUNT + c] = true;
				return curve_line(label, lineno, c, val, p, seen, err, errlen);
			}
		snprintf(err, errlen, "%s:%u: unknown key \"%.40s\"", label, lineno, key);
		return -EINVAL;
	}
	if (seen[k]) {
		snprintf(err, errlen, "%s:%u: %s given twice", label, lineno, key);
		return -EINVAL;
	}
	seen[k] = true;
	value_range(k, &min, &max, &whole);
	v = strtod(val, &end);
	if (end == val || *end || !isfinite(v) || v < min || v > max || (whole && v != floor(v))) {
		snprintf(err, errlen, "%s:%u: bad value for %s \"%.40s\" (need %s in %g..%g %s)",
			 label, lineno, key, val, whole ? "a whole number" : "a number", min, max,
			 ptab[k].info.unit);
		return -EINVAL;
	}
	p->v[k] = v;
	return 0;
}

int split_profile_read(FILE *f, const char *label, struct split_profile *p, char *err,
		       size_t errlen)
{
	bool seen[SEEN_COUNT] = {false};
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	ssize_t n;
	int ret = 0;

	split_profile_default(p);
	while (!ret && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (memchr(line, '\0', (size_t)n)) {
			snprintf(err, errlen, "%s:%u: NUL byte: not a text file", label, lineno);
			ret = -EINVAL;
		} else if (n >= PROFILE_LINE_MAX) {
			snprintf(err, errlen, "%s:%u: line longer than %d bytes", label, lineno,
				 PROFILE_LINE_MAX - 1);
			ret = -EINVAL;
		} else {
			ret = profile_line(label, lineno, line, p, seen, err, errlen);
		}
	}
	if (!ret && ferror(f)) {
		snprintf(err, errlen, "%s: read error", label);
		ret = -EIO;
	}
	free(line);
	return ret;
}

int split_profile_load(const char *path, struct split_profile *p, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct stat st;
	int ret;

	split_profile_default(p);
	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen,
			 "%s: not a regular file (a profile is written by `splitnic "
			 "calibrate -o FILE`)",
			 path);
		fclose(f);
		return -EINVAL;
	}
	ret = split_profile_read(f, path, p, err, errlen);
	fclose(f);
	return ret;
}

int split_profile_save(const char *path, const struct split_profile *p, const char *comment)
{
	FILE *f = fopen(path, "w");
	int ret = 0;

	if (!f)
		return -errno;
	fprintf(f,
		"# splitnic calibration profile (key = value; see `splitnic calibrate --keys`)\n");
	if (comment)
		fprintf(f, "# %s\n", comment);
	for (unsigned k = 0; k < SPLIT_P__COUNT; k++)
		fprintf(f, "%-20s = %-14.10g # %s: %s\n", ptab[k].info.key, p->v[k],
			ptab[k].info.unit, ptab[k].info.what);
	fprintf(f, "# %s: %s\n%s =", grid_info.key, grid_info.what, grid_info.key);
	for (uint32_t i = 0; i < p->n_grid; i++)
		fprintf(f, " %.6g", p->grid[i]);
	fprintf(f, "\n");
	for (unsigned c = 0; c < SPLIT_CV__COUNT; c++) {
		fprintf(f, "# %s (%s): %s\n%s =", ctab[c].key, ctab[c].unit, ctab[c].what,
			ctab[c].key);
		for (uint32_t i = 0; i < p->n_grid; i++)
			fprintf(f, " %.6g", p->curve[c][i]);
		fprintf(f, "\n");
	}
	if (fclose(f))
		ret = -errno;
	return ret;
}
