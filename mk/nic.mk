# splitnic-nic: the DPDK process that is the NIC (nicfw/nic/), and the `lcore` platform
# (nicfw/lcore/, the executor chain on DPDK lcores) in $(B)/libsnniclc.a. Only these objects
# (and tests/test_lcore.o) get DPDK's flags: pkg-config's -march=corei7 and -include
# rte_config.h stay off everything else. DPDK's include dirs go in as -isystem.
#
#   make B=... $(B)/splitnic-nic      (also built by `make all`)

DPDK_CFLAGS := $(subst -I,-isystem ,$(call pc_cflags,libdpdk))
DPDK_LIBS := $(call pc_libs,libdpdk)

NICLC_SRC := $(sort $(wildcard nicfw/lcore/*.c))
NICLC_OBJ := $(NICLC_SRC:%.c=$(B)/%.o)
LIBNICLC := $(B)/libsnniclc.a
NIC_SRC := $(sort $(wildcard nicfw/nic/*.c))
NIC_OBJ := $(NIC_SRC:%.c=$(B)/%.o)
SPLITNIC_NIC := $(B)/splitnic-nic

$(NICLC_OBJ) $(NIC_OBJ) $(B)/tests/test_lcore.o: MOD_CFLAGS += $(DPDK_CFLAGS)

$(LIBNICLC): $(NICLC_OBJ)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(SPLITNIC_NIC): $(NIC_OBJ) $(LIBNICLC) $(LIBDPDKSRV) $$(PROJECT_LIBS)
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $(NIC_OBJ) $(LIBNICLC) $(LIBDPDKSRV) $(PROJECT_LIBS) $(DPDK_LIBS) $(EXT_LIBS)

# (mk/nicfw.mk is read after this file: its library is named by path here)
# test_lcore: the generic test rule, plus the lcore library and DPDK after the project libraries
$(B)/tests/test_lcore: $(LIBNICLC)
LDFLAGS_test_lcore = $(LIBNICLC) $(LIBNICFW) $(LIBEXEC) $(LIBKERN) $(LIBMODEL) $(LIBPROTO) \
	$(DPDK_LIBS)
# bench_lcore: the generic bench rule, with DPDK's flags (EAL, rings) and the lcore library
$(B)/bench/bench_lcore: MOD_CFLAGS += $(DPDK_CFLAGS)
$(B)/bench/bench_lcore: $(LIBNICLC)
LDFLAGS_bench_lcore = $(LIBNICLC) $(LIBNICFW) $(LIBEXEC) $(LIBKERN) $(LIBMODEL) $(LIBPROTO) \
	$(DPDK_LIBS)

all: $(SPLITNIC_NIC)

-include $(NICLC_OBJ:.o=.d) $(NIC_OBJ:.o=.d)
