# Test, demo and bench entry points. `make test` and `make demo` install missing packages first,
# then re-read this Makefile (pkg-config flags are evaluated when it is parsed).

test: deps
	$(Q)$(MAKE) --no-print-directory test-run

test-run: all
	$(Q)tests/run-tests.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory demo-run

demo-run: $(SPLITNIC) $(SPLITNIC_NIC) $(SPLITNIC_HOST)
	$(Q)B=$(B) lab/demo.sh

bench: deps
	$(Q)$(MAKE) --no-print-directory bench-run

bench-run: all
	$(Q)tests/bench/run-bench.sh

# The kernel figures alone (binary kernels vs OpenBLAS, memory bandwidth, bundled models at
# batch 1 and 64, and the peers: PyTorch and ONNX Runtime float32 on the same shapes).
bench-kernels: $(B)/bench/bench_kernels $(B)/bench/bench_models models $(SPLITNIC)
	$(Q)BENCH_JSONL=$${BENCH_JSONL:-$(CURDIR)/$(B)/bench.jsonl} $(B)/bench/bench_kernels
	$(Q)BENCH_JSONL=$${BENCH_JSONL:-$(CURDIR)/$(B)/bench.jsonl} $(B)/bench/bench_models \
		/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz $(B)/models/fmnist-*.snm
	$(Q)B=$(B) BENCH_JSONL=$${BENCH_JSONL:-$(CURDIR)/$(B)/bench.jsonl} \
		/usr/bin/python3 tests/bench/bench_peers.py

# Split experiments over the packet path and the planner's accuracy scored against them (root,
# about 45 minutes): tests/bench/bench_split.sh.
bench-split: all models
	$(Q)B=$(B) BENCH_JSONL=$${BENCH_JSONL:-$(CURDIR)/$(B)/bench.jsonl} tests/bench/bench_split.sh

# The shutdown stress test at its full count (make test runs it once per way of stopping).
stress: all
	$(Q)STRESS_N=$${STRESS_N:-50} bash tests/integration/test_shutdown_stress.sh

.PHONY: test-run demo-run bench-run bench-kernels bench-split stress
