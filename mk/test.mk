# Test, demo and bench entry points. `make test` and `make demo` install missing packages first,
# then re-read this Makefile (pkg-config flags are evaluated when it is parsed).

test: deps
	$(Q)$(MAKE) --no-print-directory test-run

test-run: all
	$(Q)tests/run-tests.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory demo-run

demo-run: $(SPLITNIC) $(SPLITNIC_NIC) $(SPLITNIC_HOST)
	$(Q)B=$(B) tools/demo.sh

bench: deps
	$(Q)$(MAKE) --no-print-directory bench-run

bench-run: all
	$(Q)tests/bench/run-bench.sh

.PHONY: test-run demo-run bench-run
