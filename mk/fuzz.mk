# libFuzzer targets (clang, ASan + UBSan): one per parser of untrusted bytes. Fragments append
# theirs to FUZZ_TARGETS (a target fuzz_NAME has tests/fuzz/fuzz_NAME.c and committed seeds in
# tests/fuzz/corpus/NAME/).
#
#   make fuzz                     build every target, run each for FUZZ_SECONDS (default 60),
#                                 one after the other, on a scratch copy of its seed corpus
#   make fuzz-build               build only: $(B)/fuzz/fuzz_*
#
# Crashes land in $(B)/fuzz/ as crash-*; the committed seeds stay in tests/fuzz/corpus/.

FUZZ_SECONDS ?= 60
FUZZ_CFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -D_GNU_SOURCE -I. -Wall -Wextra -Werror -Wno-unused-parameter
# Objects linked into a target: instrumented for coverage, without libFuzzer's main.
FUZZ_OBJ_CFLAGS := $(subst -fsanitize=fuzzer,-fsanitize=fuzzer-no-link,$(FUZZ_CFLAGS))

# The model file, the converter (arch.json, weights.npz), plan files and calibration profiles.
FUZZ_KERN_TARGETS := fuzz_model fuzz_arch fuzz_npz fuzz_plan fuzz_profile
FUZZ_TARGETS += $(FUZZ_KERN_TARGETS)
FUZZ_KERN_OBJ := $(patsubst %.c,$(B)/fuzz/obj/%.o,$(PROTO_SRC) $(MODEL_SRC) $(CONVERT_SRC) $(KERN_SRC) $(EXEC_SRC) \
	$(SPLIT_SRC))

$(B)/fuzz/obj/%.o: %.c
	$(call say,FUZZCC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_OBJ_CFLAGS) $(MOD_CFLAGS) $(call isa_flags,$<) -MMD -MP -c $< -o $@

$(FUZZ_KERN_TARGETS:%=$(B)/fuzz/%): $(B)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_kern.h $(FUZZ_KERN_OBJ) $(LIBCUDA)
	$(call say,FUZZLD,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(MOD_CFLAGS) -o $@ $< $(FUZZ_KERN_OBJ) $(LIBCUDA) $(MODULE_EXT_LIBS) \
		$(JSON_LIBS) $(ZIP_LIBS) $(ZLIB_LIBS) $(BLAS_LIBS) -ldl -lm -pthread

-include $(FUZZ_KERN_OBJ:.o=.d)

fuzz-build: $$(addprefix $(B)/fuzz/,$$(FUZZ_TARGETS))

# One BLAS thread: the targets run one at a time on a shared machine.
fuzz: fuzz-build
	$(Q)for t in $(FUZZ_TARGETS); do \
		work=$(B)/fuzz/corpus-$$t; mkdir -p $$work; \
		cp -n tests/fuzz/corpus/$${t#fuzz_}/* $$work/ 2>/dev/null || true; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		(cd $(B)/fuzz && OPENBLAS_NUM_THREADS=1 ./$$t -max_total_time=$(FUZZ_SECONDS) \
			-print_final_stats=1 corpus-$$t) || exit 1; \
	done

.PHONY: fuzz-build
