# SPDX-License-Identifier: MIT
"""Checks the splitnic-host integration tests share (imported by their inline Python):

    client_answers(name, prefix, want, n)  a `splitnic client --json --classes` run (PREFIX.json,
                                           PREFIX.classes) summarized on one line; returns the
                                           client's JSON and its problems: not n answers,
                                           errors, timeouts, duplicate or stray responses,
                                           classes differing from `want` (a classes file)
    server_total_ok(cli)                   the RESPONSE's total timing field is the server-side
                                           total (>= host + pack + nic), as the host and the NIC
                                           fill them
    verdict(bad)                           exit 1 printing the problems, if any
"""

import json
import sys


def client_answers(name, prefix, want, n):
    cli = json.load(open(prefix + ".json"))
    got = [int(line) for line in open(prefix + ".classes")]
    want = [int(line) for line in open(want)][:n]
    diff = sum(1 for a, b in zip(got, want) if a != b)
    print(f"{name}: {cli['responses']}/{cli['requests']} responses, {cli['errors']['total']} "
          f"errors, {cli['timeouts']} timeouts, executors {cli['executors']}, accuracy "
          f"{cli['accuracy']:.4f}, classes differing from splitnic run: {diff}; latency p50 "
          f"{cli['latency_us']['p50']:.0f} us p99 {cli['latency_us']['p99']:.0f} us, "
          f"{cli['throughput_rps']:.0f} req/s; server mean ns "
          + " ".join(f"{k}={v:.0f}" for k, v in cli["server_mean_ns"].items() if v))
    bad = []
    if cli["responses"] != n or len(got) != n or len(want) != n:
        bad.append(f"{cli['responses']} responses for {n} images")
    if cli["errors"]["total"] or cli["timeouts"] or cli["duplicates"] or cli["stray"]:
        bad.append("errors, timeouts, duplicate or stray responses")
    if diff:
        bad.append(f"{diff} classes differ from splitnic run")
    return cli, bad


def server_total_ok(cli):
    t = cli["server_mean_ns"]
    return t["total"] + 1 >= t["host"] + t["pack"] + t["nic"] and t["host"] and t["nic"]


def verdict(bad):
    if bad:
        sys.exit("FAIL: " + "; ".join(bad))
