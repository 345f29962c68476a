/* SPDX-License-Identifier: MIT */
/*
 * cli/calibrate_packet.h — `splitnic calibrate --packet`: the packet path measured as deployed
 * (splitnic client, splitnic-nic and splitnic-host in the namespaces of lab/sweep_lab.sh, sharing
 * this machine's cores) into the profile's packet-path keys and load curves (split/calib.h).
 */
#ifndef CLI_CALIBRATE_PACKET_H
#define CLI_CALIBRATE_PACKET_H

#include <stdint.h>

#include "split/split.h"

struct cal_pk_opts {
	const char *lab, *tag; /* lab/sweep_lab.sh and its namespaces' tag (NULL: defaults) */
	const char *platform;  /* splitnic-nic --platform: emu or lcore */
	const char *host_opt;  /* more splitnic-host options, as the sweeps pass them */
	const char *nic_opt;   /* more splitnic-nic options, as the sweeps pass them */
	uint32_t executors;    /* splitnic-nic --executors */
	uint32_t rounds;       /* interleaved rounds of every measurement (medians) */
	uint32_t attempts;     /* most calibrations while the rounds disagree */
	double duration;       /* seconds of load per point and round */
	double max_spread;     /* rounds within this relative range: a quiet machine */
};

/*
 * Measure, fit and fill pr's packet-path keys and curves (pr holds the in-process keys, which
 * the fit uses). Each attempt measures every figure in o->rounds interleaved rounds; when a
 * figure's rounds spread more than o->max_spread, it says that the machine was noisy, shows the
 * spread and measures again, up to o->attempts, keeping every round: the fit takes the medians
 * of all the rounds measured, and stops early once an attempt's rounds moved the fitted figures
 * by at most o->max_spread / 2 (cal.spread records the quietest attempt's spread). Returns 0,
 * or -errno after a message.
 */
int cal_packet_run(struct split_profile *pr, const struct cal_pk_opts *o);

#endif /* CLI_CALIBRATE_PACKET_H */
