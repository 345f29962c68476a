# nicfw/xdp/: the XDP executor. BPF objects (clang -target bpf), their skeletons (bpftool gen
# skeleton, generated before the loader compiles), and the userspace library libsnxdp.a.

BPFTOOL ?= bpftool
XDP_DIR := nicfw/xdp
XDP_BPF_SRC := $(sort $(wildcard $(XDP_DIR)/*.bpf.c))
XDP_BPF_OBJ := $(XDP_BPF_SRC:%.bpf.c=$(B)/%.bpf.o)
XDP_SKEL := $(XDP_BPF_SRC:%.bpf.c=$(B)/%.skel.h)
XDP_SRC := $(filter-out %.bpf.c,$(sort $(wildcard $(XDP_DIR)/*.c)))
XDP_OBJ := $(XDP_SRC:%.c=$(B)/%.o)
LIBXDP := $(B)/libsnxdp.a

BPF_ARCH_INC := /usr/include/$(shell $(CC) -print-multiarch 2>/dev/null)
BPF_CFLAGS := -target bpf -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -I. \
	-I$(BPF_ARCH_INC) -ffreestanding

$(B)/%.bpf.o: %.bpf.c
	$(call say,BPF,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/%.skel.h: $(B)/%.bpf.o
	$(call say,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst .,_,$(notdir $*))_bpf > $@.tmp && mv $@.tmp $@

.SECONDARY: $(XDP_BPF_OBJ)

$(XDP_OBJ): $(XDP_SKEL)
$(XDP_OBJ): MOD_CFLAGS += -I$(B)/$(XDP_DIR)

$(LIBXDP): $(XDP_OBJ)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

MODULE_EXT_LIBS += $(shell $(PKG_CONFIG) --libs libbpf) -lelf -lz

-include $(XDP_BPF_OBJ:.o=.d) $(XDP_OBJ:.o=.d)
