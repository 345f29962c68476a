# protocol/: libFuzzer targets for the parser, the reassembler and the frame parser (clang, ASan + UBSan).
#
#   make fuzz                     build every target, run each for FUZZ_SECONDS (default 60), one after
#                                 the other, on a scratch copy of the committed seed corpus
#   make fuzz-build               build only: $(B)/fuzz/fuzz_parse, fuzz_reasm, fuzz_frame
#
# Crashes land in $(B)/fuzz/ as crash-*; the committed seeds stay in tests/fuzz/corpus/.

FUZZ_SECONDS ?= 60
FUZZ_CFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -D_GNU_SOURCE -I. -Wall -Wextra -Werror -Wno-unused-parameter
FUZZ_TARGETS += fuzz_parse fuzz_reasm fuzz_frame
FUZZ_BIN = $(FUZZ_TARGETS:%=$(B)/fuzz/%)

$(B)/fuzz/%: tests/fuzz/%.c $(PROTO_SRC) $(wildcard protocol/*.h)
	$(call say,FUZZCC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ $< $(PROTO_SRC)

fuzz-build: $(FUZZ_BIN)

fuzz: $(FUZZ_BIN)
	$(Q)for t in $(FUZZ_TARGETS); do \
		work=$(B)/fuzz/corpus-$$t; mkdir -p $$work; \
		cp -n tests/fuzz/corpus/$${t#fuzz_}/* $$work/ 2>/dev/null || true; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		(cd $(B)/fuzz && ./$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			corpus-$$t) || exit 1; \
	done

.PHONY: fuzz-build
