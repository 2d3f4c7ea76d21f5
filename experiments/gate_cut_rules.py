"""Where to cut the gate logits of a trained run: rules beyond `GateSampler`'s (issue 39).

    python experiments/gate_cut_rules.py [--variant _cw1_cadversarial] [--seeds 0 1 2]

Rescores the runs of `adaptive_gates.py` (`runs/adaptive_gates/TASK_ganet_seedS_lr0.01VARIANT`)
under cuts of the gate logits: `margin` (logit_t >= max logit - delta), `relative` (p_t >= r max
p, `GateSampler`'s), `gap` (above the largest gap of the sorted logits), `otsu` (the split of
largest between-group variance) and `threshold` (p_t > 0.5). All but `threshold` keep the most
probable token open; `margin` and `relative` take ONE value for the family, of highest smallest
validation F1. Test scores of the open gates against the keywords, and the share of filler with
p_t > 0.5, go to `results/adaptive_gates/cut_rules{VARIANT}.json` and `.md`.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run as a script
from experiments import adaptive_gates as gates
from experiments.runner import REPO
from experiments.runner import machine

GRIDS = {
    "margin": [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0],
    "relative": [0.9, 0.95, 0.97, 0.98, 0.99],
}


def cut(rule, value, logits, real):
    """Boolean open gates `(batch, steps)` of `rule` on `logits`."""
    masked = np.where(real, logits, -np.inf)
    if rule in ("threshold", "relative"):  # GateSampler's own rules
        from ganet_tf.layers import GateSampler

        parameters = {"inference_ratio": value} if rule == "relative" else {}
        return GateSampler(inference_mode=rule, **parameters)(logits, mask=real).numpy() > 0.5
    if rule == "margin":
        opened = masked >= masked.max(axis=1, keepdims=True) - value
    else:
        opened = np.stack([_cut_row(rule, row, row_real) for row, row_real in zip(logits, real, strict=True)])
    opened[np.arange(len(logits)), np.argmax(masked, axis=1)] |= real.any(axis=1)
    return opened & real


def _cut_row(rule, logits, real):
    """The open gates of one text under `gap` or `otsu`."""
    ordered = np.sort(logits[real])[::-1]
    if len(ordered) < 2:
        return real
    if rule == "gap":
        k = int(np.argmax(ordered[:-1] - ordered[1:])) + 1
    else:  # otsu: k tokens above, the rest below
        n, sums, ks = len(ordered), np.cumsum(ordered)[:-1], np.arange(1, len(ordered))
        above, below = sums / ks, (ordered.sum() - sums) / (n - ks)
        k = int(np.argmax(ks * (n - ks) * (above - below) ** 2)) + 1
    return real & (logits >= ordered[k - 1])


def scores(opened, keywords, real):
    from ganet_tf.metrics import selection_scores

    return gates.summary(selection_scores(opened, keywords, real), 0.0)


def split_data(run_dir, task, split):
    """(logits, real-token mask, keyword masks) of `split`'s texts of `task` under the run."""
    texts, _, keywords = gates.task_data(task, split)
    logits, real = gates.gate_logits(run_dir, texts)
    return logits, real, keywords[:, : logits.shape[1]]


def rescore(seed, variant):
    """The validation-chosen margin and relative values and every rule's test scores, per task."""
    validation, test = {}, {}
    for task in gates.TASKS:
        run_dir = os.path.join(REPO, gates.RUNS, f"{task}_ganet_seed{seed}_lr0.01{variant}")
        if not os.path.isdir(run_dir):
            raise SystemExit(f"No run {run_dir}: train it with experiments/adaptive_gates.py first.")
        logits, real, keywords = split_data(run_dir, task, "validation")
        validation[task] = {
            (rule, value): scores(cut(rule, value, logits, real), keywords, real)["f1"]
            for rule, grid in GRIDS.items()
            for value in grid
        }
        test[task] = split_data(run_dir, task, "test")
    chosen = {}
    for rule, grid in GRIDS.items():
        worst = {value: min(validation[task][rule, value] for task in validation) for value in grid}
        best = max(grid, key=lambda value: worst[value])
        chosen[rule] = {"value": best, "smallest_validation_f1": worst[best]}
    rules = [(rule, chosen[rule]["value"]) for rule in GRIDS] + [("gap", None), ("otsu", None), ("threshold", None)]
    for task, (logits, real, keywords) in test.items():
        filler = real & ~keywords
        test[task] = {
            "filler_open_share": float(np.mean(logits[filler] > 0.0)),
            "keyword_logit_mean": float(np.mean(logits[real & keywords])),
            "filler_logit_mean": float(np.mean(logits[filler])),
            "rules": {r: {"value": v, **scores(cut(r, v, logits, real), keywords, real)} for r, v in rules},
        }
    return {"chosen": chosen, "test": test}


def table(report):
    lines = [
        "# Cuts of the trained gate logits (issue 39)",
        "",
        f"Written by `{report['command']}` on {report['machine']} (shared with other jobs).",
        "",
        "Test texts of each task; `margin` and `relative` use the one value per seed chosen on validation",
        "(highest smallest F1 over the tasks). Precision and recall of the open gates against the keywords,",
        "density of open gates (true keyword share in brackets). `filler p>0.5`: the share of filler tokens",
        "the trained gates open by themselves.",
        "",
        "| seed | task | filler p>0.5 | rule | value | precision | recall | density (true) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for seed, result in report["seeds"].items():
        for task, entry in result["test"].items():
            for rule, s in entry["rules"].items():
                value = "-" if s["value"] is None else f"{s['value']:g}"
                lines.append(
                    f"| {seed} | {task} | {entry['filler_open_share']:.3f} | {rule} | {value} | "
                    f"{s['precision']:.3f} | {s['recall']:.3f} | {s['attended_density']:.3f} ({s['true_share']:.3f}) |"
                )
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="_cw1_cadversarial", help="run name suffix after _lr0.01")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    command = " ".join(["python experiments/gate_cut_rules.py", *sys.argv[1:]])
    report = {"machine": machine(), "command": command, "variant": args.variant, "seeds": {}}
    for seed in args.seeds:
        report["seeds"][str(seed)] = rescore(seed, args.variant)
        print(json.dumps({"seed": seed, "chosen": report["seeds"][str(seed)]["chosen"]}), flush=True)
    out = os.path.join(REPO, gates.RESULTS, f"cut_rules{args.variant}")
    with open(out + ".json", "w") as handle:
        json.dump(report, handle, indent=1)
    with open(out + ".md", "w") as handle:
        handle.write("\n".join(table(report)) + "\n")


if __name__ == "__main__":
    main()
