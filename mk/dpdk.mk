# dpdk/: what both DPDK servers share (dpdk/server.h): the process's life from OpenBLAS and EAL
# to the EAL runtime folder's removal, signals, the drain, the poll loops' idle policy and the
# registration of their telemetry commands. Linked into splitnic-nic and splitnic-host; its
# objects get DPDK's flags (mk/nic.mk's DPDK_CFLAGS, read when they are built).

DPDKSRV_SRC := $(sort $(wildcard dpdk/*.c))
DPDKSRV_OBJ := $(DPDKSRV_SRC:%.c=$(B)/%.o)
LIBDPDKSRV := $(B)/libsndpdk.a

$(DPDKSRV_OBJ): MOD_CFLAGS += $(DPDK_CFLAGS)

$(LIBDPDKSRV): $(DPDKSRV_OBJ)
	$(archive)

-include $(DPDKSRV_OBJ:.o=.d)
