"""Where to cut the gate logits of a trained run: rules beyond `GateSampler`'s (issue 39).

    python experiments/gate_cut_rules.py [--variant _cw1_cadversarial] [--seeds 0 1 2]

Rescores the synthetic-family runs that `experiments/adaptive_gates.py`
trained (the git-ignored `runs/adaptive_gates/TASK_ganet_seedS_lr0.01VARIANT`;
run that script first) under cuts of the gate logits that `GateSampler` does
not offer, to learn whether a better test rule could reach the issue's
precision on every task, or whether the trained logits themselves open
filler:

- `margin`: open t where logit_t >= max_s logit_s - delta (a relative rule on
  the logits rather than on p_t, which saturates near 1);
- `relative`: GateSampler's rule, p_t >= r max_s p_s, for reference;
- `gap`: open the tokens above the largest gap between consecutive sorted
  logits of the text (no parameter);
- `otsu`: the split of the text's sorted logits with the largest
  between-group variance (no parameter);
- `threshold`: p_t > 0.5.

Every rule but `threshold` keeps the text's most probable token open
(`relative` and `threshold` are `GateSampler`'s own). The parameter of
`margin` and `relative` is ONE value for the family, the one with the
highest smallest validation F1 over the tasks (the validation texts of
`adaptive_gates.py`). Scores are of the open gates against the keywords, on
the test texts. Beside them, the share of filler tokens with p_t > 0.5: the
filler the trained gates open by themselves. Writes
`results/adaptive_gates/cut_rules{VARIANT}.json` and `.md`.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import adaptive_gates  # noqa: I001 - beside runner, in experiments/
import selection_family
from runner import REPO
from runner import machine

GRIDS = {
    "margin": [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0],
    "relative": [0.9, 0.95, 0.97, 0.98, 0.99],
}


def _sorted_real(row_logits, row_real):
    return np.sort(row_logits[row_real])[::-1]


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
        opened = np.zeros_like(real)
        for i in range(len(logits)):
            ordered = _sorted_real(logits[i], real[i])
            if len(ordered) < 2:
                opened[i] = real[i]
                continue
            if rule == "gap":
                k = int(np.argmax(ordered[:-1] - ordered[1:])) + 1
            else:  # otsu: k tokens above, the rest below
                n = len(ordered)
                sums = np.cumsum(ordered)[:-1]
                k_range = np.arange(1, n)
                above, below = sums / k_range, (ordered.sum() - sums) / (n - k_range)
                k = int(np.argmax(k_range * (n - k_range) * (above - below) ** 2)) + 1
            opened[i] = real[i] & (logits[i] >= ordered[k - 1])
    best = np.argmax(masked, axis=1)
    opened[np.arange(len(logits)), best] |= real.any(axis=1)
    return opened & real


def scores(opened, keywords, real):
    from ganet_tf.metrics import selection_scores

    return adaptive_gates._summary(selection_scores(opened, keywords, real), 0.0)


def rescore(seed, variant):
    """Validation-chosen margin and relative values and every rule's test
    scores, for each task's run of `seed`."""
    validation, test = {}, {}
    for task in selection_family.TASKS:
        run_dir = os.path.join(REPO, adaptive_gates.RUNS, f"{task}_ganet_seed{seed}_lr0.01{variant}")
        if not os.path.isdir(run_dir):
            raise SystemExit(f"No run {run_dir}: train it with experiments/adaptive_gates.py first.")
        texts, _, keywords = adaptive_gates.validation_data(task)
        logits, real = adaptive_gates.gate_logits(run_dir, texts)
        keywords = keywords[:, : logits.shape[1]]
        validation[task] = {
            (rule, value): scores(cut(rule, value, logits, real), keywords, real)["f1"]
            for rule, grid in GRIDS.items()
            for value in grid
        }
        texts, _, keywords = selection_family.task_data(task, "test", None)
        logits, real = adaptive_gates.gate_logits(run_dir, texts)
        keywords = keywords[:, : logits.shape[1]]
        filler = real & ~keywords
        test[task] = {
            "filler_open_share": float(np.mean(logits[filler] > 0.0)),
            "keyword_logit_mean": float(np.mean(logits[real & keywords])),
            "filler_logit_mean": float(np.mean(logits[filler])),
            "rules": {},
        }
        test[task]["_data"] = (logits, real, keywords)
    chosen = {}
    for rule, grid in GRIDS.items():
        worst = {value: min(validation[task][rule, value] for task in validation) for value in grid}
        best = max(grid, key=lambda value: worst[value])
        chosen[rule] = {"value": best, "smallest_validation_f1": worst[best]}
    for entry in test.values():
        logits, real, keywords = entry.pop("_data")
        rules = [(rule, chosen[rule]["value"]) for rule in GRIDS] + [("gap", None), ("otsu", None), ("threshold", None)]
        for rule, value in rules:
            entry["rules"][rule] = {"value": value, **scores(cut(rule, value, logits, real), keywords, real)}
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
    out = os.path.join(REPO, adaptive_gates.RESULTS, f"cut_rules{args.variant}")
    with open(out + ".json", "w") as handle:
        json.dump(report, handle, indent=1)
    with open(out + ".md", "w") as handle:
        handle.write("\n".join(table(report)) + "\n")


if __name__ == "__main__":
    main()
