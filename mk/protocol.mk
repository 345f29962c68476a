# protocol/: libFuzzer targets for the parser and the reassembler (mk/fuzz.mk runs them).

FUZZ_TARGETS += fuzz_parse fuzz_reasm

$(B)/fuzz/fuzz_parse $(B)/fuzz/fuzz_reasm: $(B)/fuzz/%: tests/fuzz/%.c $(PROTO_SRC) $(wildcard protocol/*.h)
	$(call say,FUZZCC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ $< $(PROTO_SRC)
