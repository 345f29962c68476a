# protocol/: libFuzzer targets for the parser, the reassembler and the frame parser (mk/fuzz.mk
# runs them).

FUZZ_TARGETS += fuzz_parse fuzz_reasm fuzz_frame

$(B)/fuzz/fuzz_parse $(B)/fuzz/fuzz_reasm $(B)/fuzz/fuzz_frame: $(B)/fuzz/%: tests/fuzz/%.c $(PROTO_SRC) $(wildcard protocol/*.h)
	$(call say,FUZZCC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ $< $(PROTO_SRC)
