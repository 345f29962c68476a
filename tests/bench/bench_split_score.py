#!/usr/bin/python3
"""Scores splitnic sweep --packet JSON reports against their MEASUREMENTS (never the model).

usage: bench_split_score.py JSONL METHOD GROUP:SWEEP.json... [--cal-compare PCT]
                            [--agree GROUP_A GROUP_B]...

A case is a model at one link rate and offered load. Per case, from the measured points only:
  - the measured best: goodput first (a split answering < 99% of what was offered never wins
    on latency; if none answers 99%, the one answering most), then the lowest measured p50;
    splits within max(3%, the rounds' spread) of it are tied best;
  - a policy is within 5% when its split answers >= 99% and its measured p50 is within
    max(5%, the rounds' spread) of the best (or, when no split answers 99%, its answered share
    is within max(a point, the rounds' range of the share, either's) of the best share);
  - policies: the planner (its choice from the model alone), always all-host, and
    `plan --measure 3` replayed on the sweep's own measurements (the best measured of the
    model's top 3, ties within the spread going to the model's order).
Prediction errors: |MODELED - MEASURED| / MEASURED of the p50 over unsaturated points (MEASURED
answered >= 99% and MODELED bottleneck utilisation < 0.95) and over all answered points; the
answered share's error in points at every point.
--agree A B: the same measurements predicted twice (group B: `splitnic sweep --replay` of group
A's sweeps with another calibration's profile, as make bench-split does with the first of its two
calibrations): in how many cases both choose the same split, and how far apart their MODELED p50s
(over points unsaturated in the measurement and in both predictions) and answered shares are.
Figures are printed and appended to JSONL, one group (project, held-out) at a time.
"""
import json
import statistics
import sys

MIN_ANS = 0.99


def share(m):
    return m["responses"] / m["requests"] if m["requests"] else 0.0


def p50(m):
    return m["p50_us"] if m["p50_us"] else None


def spread(m):
    return m.get("p50_spread") or 0.0


def ans_tol(m, b):
    """answered shares closer than this are tied: a point, or the rounds' range of either"""
    return max(0.01, m.get("answered_spread") or 0.0, b.get("answered_spread") or 0.0)


def verdict(splits):
    """(best split, goodput met, {name: within5}, {name: tied})"""
    meas = {s["split"]: s["measured"] for s in splits}
    ok = [n for n, m in meas.items() if share(m) >= MIN_ANS and p50(m)]
    within, tie = {}, {}
    if ok:
        best = min(ok, key=lambda n: p50(meas[n]))
        b = meas[best]
        for n, m in meas.items():
            good = n in ok
            sp = max(spread(m), spread(b))
            within[n] = good and p50(m) <= p50(b) * (1 + max(0.05, sp))
            tie[n] = good and p50(m) <= p50(b) * (1 + max(0.03, sp))
        return best, True, within, tie
    best = max(meas, key=lambda n: share(meas[n]))
    for n, m in meas.items():
        within[n] = tie[n] = share(m) >= share(meas[best]) - ans_tol(m, meas[best])
    return best, False, within, tie


def replay_measure(splits, ranking, k, tie_order=True):
    """plan --measure k on the sweep's own points: the best measured of the model's top k."""
    meas = {s["split"]: s["measured"] for s in splits}
    top = [n for n in ranking if n in meas][:k]
    best = None
    for n in top:
        m = meas[n]
        if best is None:
            best = n
            continue
        b = meas[best]
        ok = share(m) >= MIN_ANS and p50(m) is not None
        bok = share(b) >= MIN_ANS and p50(b) is not None
        if ok != bok:
            best = n if ok else best
        elif ok:
            tol = max(0.03, spread(m), spread(b))
            if p50(m) < p50(b) / (1 + tol):
                best = n
        elif share(m) > share(b) + ans_tol(m, b):
            best = n
    return best


def score(group, files):
    cases = planner_ok = host_ok = meas3_ok = 0
    errs_u, errs_all, ans_err, planner_errs, lines = [], [], [], [], []
    for path in files:
        j = json.load(open(path))
        for r in j["rates"]:
            for ld in r["loads"]:
                splits = [s for s in ld["splits"] if s["measured"]["requests"]]
                if not splits:
                    continue
                for s in splits:
                    m, p = s["measured"], s["predicted"]
                    ans_err.append(abs(p["answered_share"] - share(m)))
                    if p50(m) and share(m) > 0:
                        e = abs(p["p50_us"] - p50(m)) / p50(m)
                        errs_all.append(e)
                        if share(m) >= MIN_ANS and p["bottleneck_rho"] < 0.95:
                            errs_u.append(e)
                best, met, within, tie = verdict(splits)
                names = {s["split"] for s in splits}
                planner = ld["planner"]
                cases += 1
                pw = within.get(planner, False)
                hw = within.get("all-host", False)
                m3 = replay_measure(splits, ld.get("modeled_ranking", []), 3)
                mw = within.get(m3, False) if m3 else False
                planner_ok += pw
                host_ok += hw
                meas3_ok += mw
                pm = next((s for s in splits if s["split"] == planner), None)
                if pm and p50(pm["measured"]):
                    planner_errs.append(abs(pm["predicted"]["p50_us"] - p50(pm["measured"])) /
                                        p50(pm["measured"]))
                gb = r["link_gbps"] if r["link_gbps"] is not None else "unshaped"
                lines.append(f"  {j['model']:<22} {gb!s:>8} Gbit/s {ld['offered_rps']:8.0f}/s: best "
                             f"{best}{'' if met else ' (none answers 99%)'}"
                             f"{' (ties: ' + ', '.join(n for n in sorted(names) if tie[n] and n != best) + ')' if sum(tie.values()) > 1 else ''}; "
                             f"planner {planner} {'ok' if pw else 'MISS' if planner in names else 'not measured'}; "
                             f"all-host {'ok' if hw else 'miss'}; measure-3 {m3} {'ok' if mw else 'miss'}")
    if not cases:
        print(f"{group}: no cases")
        return []
    med = lambda v: 100 * statistics.median(v) if v else float("nan")
    figs = [
        (f"split_{group}_planner_within5", 100 * planner_ok / cases, "%"),
        (f"split_{group}_all_host_within5", 100 * host_ok / cases, "%"),
        (f"split_{group}_measure3_within5", 100 * meas3_ok / cases, "%"),
        (f"split_{group}_pred_err_median_unsaturated", med(errs_u), "%"),
        (f"split_{group}_pred_err_median_all", med(errs_all), "%"),
        (f"split_{group}_pred_err_median_planner", med(planner_errs), "%"),
        (f"split_{group}_answered_err_max", 100 * max(ans_err), "points"),
        (f"split_{group}_cases", cases, "cases"),
    ]
    print(f"== {group}: {cases} cases (model, link rate, load)")
    print("\n".join(lines))
    print(f"planner (model only) within 5% of the measured best: {planner_ok} of {cases} "
          f"({100 * planner_ok / cases:.0f}%, target >= 90% and more than all-host)")
    print(f"always all-host within 5%: {host_ok} of {cases} ({100 * host_ok / cases:.0f}%)")
    print(f"plan --measure 3 (replayed on the sweep's measurements) within 5%: {meas3_ok} of "
          f"{cases} ({100 * meas3_ok / cases:.0f}%, target >= 95%)")
    print(f"median |MODELED - MEASURED| / MEASURED p50: {med(errs_u):.1f}% over {len(errs_u)} "
          f"unsaturated points (target <= 15%), {med(errs_all):.1f}% over {len(errs_all)} answered "
          f"points, {med(planner_errs):.1f}% over the planner's choices")
    print(f"answered share: MODELED within {100 * max(ans_err):.1f} points of MEASURED at every "
          f"one of {len(ans_err)} points (target 5)")
    return figs


def agree(a, b, files_a, files_b):
    """Two profiles' predictions of the same measurements (b replays a's sweeps)."""
    by_model = {json.load(open(f))["model"]: f for f in files_b}
    same = cases = 0
    diffs, ans = [], []
    for fa in files_a:
        ja = json.load(open(fa))
        if ja["model"] not in by_model:
            continue
        jb = json.load(open(by_model[ja["model"]]))
        for ra, rb in zip(ja["rates"], jb["rates"]):
            for la, lb in zip(ra["loads"], rb["loads"]):
                cases += 1
                same += la["planner"] == lb["planner"]
                pb = {s["split"]: s["predicted"] for s in lb["splits"]}
                for s in la["splits"]:
                    q, m = pb.get(s["split"]), s["measured"]
                    if q is None:
                        continue
                    p = s["predicted"]
                    ans.append(abs(p["answered_share"] - q["answered_share"]))
                    if (share(m) >= MIN_ANS and max(p["bottleneck_rho"], q["bottleneck_rho"]) < 0.95
                            and p["p50_us"] and q["p50_us"]):
                        diffs.append(abs(p["p50_us"] - q["p50_us"]) / q["p50_us"])
    if not cases:
        return []
    med = 100 * statistics.median(diffs) if diffs else float("nan")
    print(f"== {a} against {b}: the same measurements, predicted from two calibrations")
    print(f"the same split chosen in {same} of {cases} cases; MODELED p50s {med:.1f}% apart "
          f"(median over {len(diffs)} unsaturated points, the largest "
          f"{100 * max(diffs) if diffs else float('nan'):.1f}%); answered shares within "
          f"{100 * max(ans):.1f} points")
    return [(f"split_{a}_calibrations_same_choice", 100 * same / cases, "%"),
            (f"split_{a}_calibrations_pred_diff_median", med, "%"),
            (f"split_{a}_calibrations_answered_diff_max", 100 * max(ans), "points")]


def main():
    jsonl, method = sys.argv[1], sys.argv[2]
    groups, cal, pairs = {}, None, []
    args = sys.argv[3:]
    while args:
        a = args.pop(0)
        if a == "--cal-compare":
            cal = float(args.pop(0))
            continue
        if a == "--agree":
            pairs.append((args.pop(0), args.pop(0)))
            continue
        g, f = a.split(":", 1)
        groups.setdefault(g, []).append(f)
    figs = []
    for g, files in groups.items():
        figs += score(g, files)
    for a, b in pairs:
        figs += agree(a, b, groups.get(a, []), groups.get(b, []))
    if cal is not None:
        figs.append(("split_calibrations_largest_difference", cal, "%"))
    with open(jsonl, "a") as f:
        for name, v, unit in figs:
            f.write(json.dumps({"name": name, "value": round(v, 2), "unit": unit,
                                "method": method}) + "\n")


if __name__ == "__main__":
    main()
