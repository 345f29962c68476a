# nicfw/: the NIC firmware (dispatcher, executor chain) and its platforms (nicfw/emu/: the
# cycle-approximate NFP model), one library linked into the splitnic CLI, the tests and the
# benchmarks. Objects use the default compile rule.

NICFW_SRC := $(sort $(wildcard nicfw/*.c nicfw/emu/*.c))
NICFW_OBJ := $(NICFW_SRC:%.c=$(B)/%.o)
LIBNICFW := $(B)/libsnnicfw.a

$(LIBNICFW): $(NICFW_OBJ)
	$(call say,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

-include $(NICFW_OBJ:.o=.d)

# libFuzzer target for the dispatcher and the executor interface it drives (exec/kexec.c; fake
# executors in the target), built from source (mk/fuzz.mk runs it; seeds in
# tests/fuzz/corpus/disp/, written by tests/fuzz/make_disp_seeds.py)
FUZZ_TARGETS += fuzz_disp

FUZZ_DISP_SRC := nicfw/dispatch.c nicfw/health.c exec/kexec.c

$(B)/fuzz/fuzz_disp: tests/fuzz/fuzz_disp.c $(FUZZ_DISP_SRC) nicfw/dispatch.h nicfw/health.h exec/kexec.h $(PROTO_SRC) $(wildcard protocol/*.h)
	$(call say,FUZZCC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_DISP_SRC) $(PROTO_SRC)
