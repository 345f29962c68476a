# splitnic-host: the host's DPDK application (host/). host/main.c and host/dpdk_*.c are the
# objects that get DPDK's flags; the rest of host/ (request table, plan execution, fallback,
# frames) builds without DPDK into $(B)/libsnhost.a, which tests/test_host links. splitnic-host
# also links the lcore platform ($(B)/libsnniclc.a) for its in-process NIC stage (--nic inproc), and
# the DPDK servers' skeleton ($(B)/libsndpdk.a, mk/dpdk.mk).
#
#   make B=... $(B)/splitnic-host      (also built by `make all`)

HOST_DPDK_SRC := host/main.c $(sort $(wildcard host/dpdk_*.c))
HOST_LIB_SRC := $(filter-out $(HOST_DPDK_SRC),$(sort $(wildcard host/*.c)))
HOST_LIB_OBJ := $(HOST_LIB_SRC:%.c=$(B)/%.o)
HOST_DPDK_OBJ := $(HOST_DPDK_SRC:%.c=$(B)/%.o)
LIBHOST := $(B)/libsnhost.a
SPLITNIC_HOST := $(B)/splitnic-host

$(HOST_DPDK_OBJ): MOD_CFLAGS += $(DPDK_CFLAGS)

$(LIBHOST): $(HOST_LIB_OBJ)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(SPLITNIC_HOST): $(HOST_DPDK_OBJ) $(LIBHOST) $$(LIBNICLC) $(LIBDPDKSRV) $$(PROJECT_LIBS)
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $(HOST_DPDK_OBJ) $(LIBHOST) $(LIBNICLC) $(LIBDPDKSRV) $(PROJECT_LIBS) \
		$(DPDK_LIBS) $(EXT_LIBS)

$(B)/tests/test_host: $(LIBHOST)
LDFLAGS_test_host = $(LIBHOST) $(LIBNICFW) $(LIBEXEC) $(LIBKERN) $(LIBCUDA) $(LIBMODEL) $(LIBPROTO) $(MODULE_EXT_LIBS) $(BLAS_LIBS) -lm

# test_trust: the trust policy's four implementations; splitnic-host's is its receive path (these
# objects, DPDK), beside the NIC's dispatcher, splitnic serve and the XDP program
TRUST_HOST_OBJ := $(B)/host/dpdk_rx.o $(B)/host/dpdk_tx.o $(B)/host/dpdk_health.o
$(B)/tests/test_trust.o: MOD_CFLAGS += $(DPDK_CFLAGS)
$(B)/tests/test_trust: $(TRUST_HOST_OBJ) $(LIBHOST)
LDFLAGS_test_trust = $(TRUST_HOST_OBJ) $(LIBHOST) $(LIBNICFW) $(LIBEXEC) $(LIBKERN) $(LIBCUDA) \
	$(LIBMODEL) $(LIBPROTO) $(MODULE_EXT_LIBS) $(BLAS_LIBS) $(DPDK_LIBS) -lm

all: $(SPLITNIC_HOST)

-include $(HOST_LIB_OBJ:.o=.d) $(HOST_DPDK_OBJ:.o=.d)
