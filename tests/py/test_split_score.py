#!/usr/bin/python3
"""Checks of tests/bench/bench_split_score.py, the scoring of `make bench-split`, on hand-made
measured points: the measured best (goodput first), "within 5%", and the replay of
`plan --measure 3` (the best measured of the model's top three, the model's order on ties).
Run: /usr/bin/python3 tests/py/test_split_score.py"""
import os
import sys

from runner import run_tests

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
import bench_split_score as score  # noqa: E402


def point(name, p50, answered=1.0, spread=0.0, ans_spread=0.0):
    n = 1000
    return {"split": name, "measured": {"requests": n, "responses": int(n * answered),
                                        "p50_us": p50, "p50_spread": spread,
                                        "answered_spread": ans_spread}}


def test_replay_keeps_the_best_measured():
    # the model ranks all-host first and it is measured fastest by far: it stays
    splits = [point("all-host", 115.4, spread=0.29), point("nic@9", 304.0, spread=0.19),
              point("nic@10", 221.5, spread=0.28)]
    assert score.replay_measure(splits, ["all-host", "nic@10", "nic@9"], 3) == "all-host"


def test_replay_takes_a_clearly_faster_split():
    splits = [point("all-host", 300.0), point("nic@9", 100.0), point("nic@10", 250.0)]
    assert score.replay_measure(splits, ["all-host", "nic@10", "nic@9"], 3) == "nic@9"
    # only the model's top k are measured
    assert score.replay_measure(splits, ["all-host", "nic@10", "nic@9"], 2) == "nic@10"


def test_replay_ties_keep_the_models_order():
    splits = [point("all-host", 100.0), point("nic@9", 98.0)]
    assert score.replay_measure(splits, ["all-host", "nic@9"], 3) == "all-host"


def test_replay_goodput_first():
    # a faster split that sheds load loses to one answering 99%; if none does, the one
    # answering most
    splits = [point("all-host", 300.0), point("nic@9", 50.0, answered=0.9)]
    assert score.replay_measure(splits, ["nic@9", "all-host"], 3) == "all-host"
    splits = [point("all-host", 300.0, answered=0.8), point("nic@9", 50.0, answered=0.9)]
    assert score.replay_measure(splits, ["all-host", "nic@9"], 3) == "nic@9"


def test_verdict():
    splits = [point("all-host", 100.0), point("nic@9", 104.0), point("nic@10", 90.0, 0.95)]
    best, met, within, _ = score.verdict(splits)
    assert best == "all-host" and met
    assert within["nic@9"] and not within["nic@10"]


def test_shedding_splits_tie_within_the_rounds_range():
    # none answers 99%: shares closer than a point, or than the rounds' range, are ties
    splits = [point("all-host", 900.0, answered=0.70, ans_spread=0.06),
              point("nic@2", 800.0, answered=0.743, ans_spread=0.02),
              point("nic@3", 700.0, answered=0.67, ans_spread=0.02)]
    best, met, within, tie = score.verdict(splits)
    assert best == "nic@2" and not met
    assert within["all-host"] and tie["all-host"]
    assert not within["nic@3"]
    # without a measured range, a point
    splits = [point("all-host", 900.0, answered=0.70), point("nic@2", 800.0, answered=0.743)]
    _, _, within, _ = score.verdict(splits)
    assert not within["all-host"]
    # --measure replay: a tie goes to the model's order
    splits = [point("all-host", 900.0, answered=0.70, ans_spread=0.06),
              point("nic@2", 800.0, answered=0.743, ans_spread=0.02)]
    assert score.replay_measure(splits, ["all-host", "nic@2"], 3) == "all-host"
    assert score.replay_measure(splits, ["nic@2", "all-host"], 3) == "nic@2"


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
