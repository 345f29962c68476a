"""The Python checks' runner (they use no test framework): every test_* function of a module,
in name order; a failure is printed with its traceback and the others still run."""
import traceback


def run_tests(namespace):
    """Runs the test_* functions in namespace (a module's globals()); the exit status."""
    tests = [(k, v) for k, v in sorted(namespace.items()) if k.startswith("test_")]
    ok = bad = 0
    for name, fn in tests:
        try:
            fn()
            ok += 1
        except Exception:
            bad += 1
            print("FAIL", name)
            traceback.print_exc()
    print("%d passed, %d failed" % (ok, bad))
    return 1 if bad else 0
