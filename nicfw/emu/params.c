// SPDX-License-Identifier: MIT
/*
 * The emulator's parameters: one table, each with its unit and where its value comes from.
 * "calibrated" marks values fitted so that the model reproduces the seed's measurements
 * (docs/architecture.md, "What the emulator's calibrated parameters reproduce"); the others are
 * NFP4000-class hardware facts or order-of-magnitude estimates, as stated.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/opts.h"
#include "nicfw/emu/emu.h"

enum param_kind {
	P_NONNEG = 0, /* a latency or a cost: >= 0 */
	P_POS = 1,    /* a rate or a clock: > 0 */
	P_COUNT = 2,  /* a whole number >= 1 */
};

struct param_row {
	struct nicfw_emu_param_info info;
	double def;
	int kind; /* enum param_kind */
};

#define WORK(k) (NICFW_EP_WORK + (k))

static const struct param_row rows[NICFW_EP__COUNT] = {
    [NICFW_EP_CLOCK_MHZ] = {{"clock_mhz", "MHz", "NFP4000 flow-processing core clock (800 MHz)"},
			    800,
			    P_POS},
    [NICFW_EP_MES] = {{"mes", "MEs",
		       "micro-engines available to the firmware; NFP4000: 48..60 flow-processing "
		       "cores by SKU (60 taken)"},
		      60,
		      P_COUNT},
    [NICFW_EP_MES_PER_ISLAND] =
	{{"mes_per_island", "MEs", "NFP flow-processing islands hold 12 MEs each"}, 12, P_COUNT},
    [NICFW_EP_THREADS_PER_ME] =
	{{"threads_per_me", "threads", "hardware contexts per ME (8-context mode)"}, 8, P_COUNT},
    [NICFW_EP_EXEC_PER_ME] = {{"exec_per_me", "threads",
			       "executor threads placed per ME; toNIC's 256 = 6 x 42 + 4 "
			       "(docs/architecture.md)"},
			      6,
			      P_COUNT},
    [NICFW_EP_CTX_SWAP] = {{"ctx_swap_cycles", "cycles",
			    "a thread resuming after a yield (ctx_arb; the ME switches contexts "
			    "in hardware, a few cycles to refill the pipeline)"},
			   2,
			   P_NONNEG},
    [NICFW_EP_CMD_ISSUE] = {{"cmd_issue_cycles", "cycles",
			     "issuing one memory or signal command onto the command bus "
			     "(estimate: a few instructions to build it)"},
			    4,
			    P_NONNEG},
    [NICFW_EP_CTM_LAT] = {{"ctm_latency_cycles", "cycles",
			   "CTM (island-local SRAM) read latency, order of 50 cycles"},
			  50,
			  P_NONNEG},
    [NICFW_EP_CTM_BW] = {{"ctm_bw", "B/cycle",
			  "CTM bandwidth seen by the command bus (estimate: one 128-bit bus "
			  "beat per cycle)"},
			 16,
			 P_POS},
    [NICFW_EP_XISLAND] = {{"xisland_cycles", "cycles",
			   "extra latency for a CTM access from another island (through the "
			   "distributed switch fabric; estimate)"},
			  40,
			  P_NONNEG},
    [NICFW_EP_IMEM_LAT] = {{"imem_latency_cycles", "cycles",
			    "IMEM (on-chip SRAM, its own island) latency, order of 150 cycles"},
			   150,
			   P_NONNEG},
    [NICFW_EP_IMEM_BW] = {{"imem_bw", "B/cycle", "IMEM bandwidth (estimate, as CTM)"}, 16, P_POS},
    [NICFW_EP_EMEM_LAT] = {{"emem_latency_cycles", "cycles",
			    "EMEM access latency on a cache hit, order of 250 cycles"},
			   250,
			   P_NONNEG},
    [NICFW_EP_EMEM_BW] = {{"emem_bw", "B/cycle",
			   "EMEM unit throughput, hit or miss, for the executors' 64-B reads; "
			   "calibrated (seed: 400 us at 2,048 and 2,700 us at 16,384 neurons, "
			   "i.e. ~3.2 GB/s of weights whether or not they fit the cache)"},
			  4.25,
			  P_POS},
    [NICFW_EP_CACHE_KIB] = {{"emem_cache_kib", "KiB",
			     "EMEM on-chip cache (NFP4000 class: 3 MB of SRAM in front of DRAM)"},
			    3072,
			    P_COUNT},
    [NICFW_EP_CACHE_WAYS] = {{"emem_cache_ways", "ways",
			      "associativity of the EMEM cache model (LRU; estimate)"},
			     8,
			     P_COUNT},
    [NICFW_EP_DRAM_LAT] = {{"dram_latency_cycles", "cycles",
			    "extra latency of an EMEM cache miss (DDR3 row access, ~60 ns "
			    "at the DRAM plus the controller)"},
			   150,
			   P_NONNEG},
    [NICFW_EP_DRAM_BW] = {{"dram_bw", "B/cycle",
			   "DRAM behind EMEM: DDR3-1600 x 64 bit = 12.8 GB/s per channel, two "
			   "channels, ~50% efficiency for 64-B reads = 12.8 GB/s = 16 B/cycle"},
			  16,
			  P_POS},
    [NICFW_EP_SIG_HOP] = {{"sig_hop_cycles", "cycles",
			   "one notification between threads on different MEs of an island "
			   "(interthread signal over the command bus); calibrated (the seed's "
			   "fixed cost per layer at 256 executors)"},
			  60,
			  P_NONNEG},
    [NICFW_EP_SIG_XISLAND] = {{"sig_xisland_cycles", "cycles",
			       "extra for a notification that crosses islands (estimate)"},
			      40,
			      P_NONNEG},
    [WORK(NICFW_WORK_XORPOP)] = {{"xorpop_cycles", "cycles/word",
				  "64-bit XOR + popcount + add on the 32-bit ME datapath: 2 x "
				  "(XOR, 3-step pop_count, add) ~ 10 instructions"},
				 10,
				 P_NONNEG},
    [WORK(NICFW_WORK_ANDPOP)] = {{"andpop_cycles", "cycles/word",
				  "one bit-plane word: AND + popcount + add, as xorpop"},
				 10,
				 P_NONNEG},
    [WORK(NICFW_WORK_NEURON)] = {{"neuron_cycles", "cycles",
				  "per neuron: loop, address arithmetic, threshold compare, "
				  "output bit (estimate)"},
				 16,
				 P_NONNEG},
    [WORK(NICFW_WORK_PLANE_BYTE)] = {{"plane_byte_cycles", "cycles/byte",
				      "dispatcher: extract 8 bits of one input byte into 8 "
				      "plane words (shift, mask, or per bit)"},
				     12,
				     P_NONNEG},
    [WORK(NICFW_WORK_FLATTEN_BIT)] = {{"flatten_bit_cycles", "cycles/bit",
				       "dispatcher: index arithmetic, extract, insert one bit"},
				      6,
				      P_NONNEG},
    [WORK(NICFW_WORK_COPY_WORD)] = {{"copy_word_cycles", "cycles/word",
				     "64-bit word through transfer registers (2 x 32-bit moves)"},
				    2,
				    P_NONNEG},
    [WORK(NICFW_WORK_FLOAT_OP)] = {{"float_op_cycles", "cycles",
				    "one double operation in software (MEs have no FPU; soft-float "
				    "add/div ~100-200 instructions)"},
				   150,
				   P_NONNEG},
    [WORK(NICFW_WORK_LAYER)] =
	{{"layer_cycles", "cycles", "dispatcher per-layer set-up (estimate)"}, 200, P_NONNEG},
    [WORK(NICFW_WORK_REQUEST)] = {{"request_cycles", "cycles",
				   "dispatcher per-request parse and model look-up (estimate)"},
				  500,
				  P_NONNEG},
    [NICFW_EP_PKT_RX] = {{"pkt_rx_cycles", "cycles",
			  "packet reception until the payload is in CTM; calibrated: half of "
			  "the seed's 35 us of packet rx + tx"},
			 14000,
			 P_NONNEG},
    [NICFW_EP_PKT_TX] = {{"pkt_tx_cycles", "cycles",
			  "response transmission; calibrated: the other half of the 35 us"},
			 14000,
			 P_NONNEG},
};

void nicfw_emu_params_default(struct nicfw_emu_params *p)
{
	for (uint32_t i = 0; i < NICFW_EP__COUNT; i++)
		p->v[i] = rows[i].def;
}

const struct nicfw_emu_param_info *nicfw_emu_param_info(uint32_t i)
{
	return i < NICFW_EP__COUNT ? &rows[i].info : NULL;
}

int nicfw_emu_param_set(struct nicfw_emu_params *p, const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');
	size_t len = eq ? (size_t)(eq - kv) : 0;
	int64_t n;
	double v;
	int ret;

	if (!eq) {
		snprintf(err, errlen, "--param %s: expected NAME=VALUE", kv);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < NICFW_EP__COUNT; i++) {
		if (strlen(rows[i].info.name) != len || strncmp(rows[i].info.name, kv, len))
			continue;
		if (rows[i].kind == P_COUNT) {
			ret = conf_int(NULL, NULL, eq + 1, 1, UINT32_MAX, &n);
			v = (double)n;
		} else {
			ret = conf_double(NULL, NULL, eq + 1, 0, INFINITY, rows[i].kind == P_POS,
					  NULL, &v);
		}
		if (ret) {
			snprintf(err, errlen, "--param %s: '%s' is not a %s", rows[i].info.name,
				 eq + 1,
				 rows[i].kind == P_COUNT ? "whole number >= 1"
				 : rows[i].kind == P_POS ? "number > 0"
							 : "number >= 0");
			return -EINVAL;
		}
		p->v[i] = v;
		return 0;
	}
	snprintf(err, errlen, "--param: no parameter named '%.*s'", (int)len, kv);
	return -EINVAL;
}
