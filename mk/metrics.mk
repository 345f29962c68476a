# metrics/: the servers' metrics endpoint (metrics/metrics.h): the Prometheus text exposition and
# its HTTP responder thread; libc only, linked by splitnic serve and the DPDK servers' skeleton.

METRICS_SRC := $(sort $(wildcard metrics/*.c))
METRICS_OBJ := $(METRICS_SRC:%.c=$(B)/%.o)
LIBMETRICS := $(B)/libsnmetrics.a
MODULE_OBJ += $(METRICS_OBJ)

$(LIBMETRICS): $(METRICS_OBJ)
	$(archive)
