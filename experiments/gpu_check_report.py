"""The README of `experiments/gpu_check.py`'s results, from its JSON."""


def _header(results):
    kind = "CPU SMOKE CHECK at tiny sizes: not results" if results["smoke"] else "results"
    settings = results["settings"]
    return [
        f"# GPU check under JAX, without TensorFlow ({kind})",
        "",
        f"`{results['command']}` (`experiments/gpu_check.py`), {results['date']}.",
        f"Devices (`jax.devices()`): {', '.join(results['devices'])}. Machine: {results['machine']}.",
        f"Versions: {', '.join(f'{k} {v}' for k, v in results['versions'].items())}.",
        f"Settings: {', '.join(f'{k} {v}' for k, v in settings.items())}.",
        "",
    ]


def _tests(tests):
    lines = ["## Layer tests marked `backends`", "", f"`{tests['command']}`: exit code {tests['returncode']},"]
    lines += [f"`{tests['summary']}` ({tests['seconds']} s).", ""]
    return lines + [f"- {line}" for line in tests["failures"]] + ([""] if tests["failures"] else [])


def _bench(bench):
    lines = [
        "## Gated vs dense 2-block encoder, bf16",
        "",
        f"Dense attention: `keras.ops.dot_product_attention`, fused kernel {bench['dense_attention']}.",
        "The gated blocks' attention is `GatedMultiHeadAttention`, through the same fused call. Medians in ms;",
        "k: the slots the gated path gathers (the round(rho T) kept tokens rounded up to a multiple of 64,",
        "`sparse_bucket_multiple=64`); FLOPs ratio: dense / gated forward FLOPs at those sizes.",
        "",
        "| T | batch | density | k infer | k train | infer dense | infer gated | speedup | FLOPs ratio | "
        "train dense | train gated | speedup | FLOPs ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in bench["cells"]:
        key = f"| {cell['T']} | {cell['batch']} | {cell['density']} |"
        if "error" in cell:
            lines.append(f"{key} failed: {cell['error']} |" + " |" * 9)
            continue
        lines.append(
            f"{key} {cell['k_infer']} | {cell['k_train']} | {cell['dense_infer_ms']:.2f} | "
            f"{cell['gated_infer_ms']:.2f} | {cell['infer_speedup']:.2f}x | {cell['infer_flops_ratio']:.2f}x | "
            f"{cell['dense_train_ms']:.2f} | {cell['gated_train_ms']:.2f} | {cell['train_speedup']:.2f}x | "
            f"{cell['train_flops_ratio']:.2f}x |"
        )
    return [*lines, ""]


def _training(train):
    def number(value, digits):
        return "-" if value is None else f"{value:.{digits}f}"

    lines = [
        f"## Training on `{train['prepared']}` ({train['dataset']}, examples {train['examples']})",
        "",
        "`train`'s builder arguments and fit settings (`experiments/gpu_check_specs.json`: `train "
        + " ".join(train["runs"][0]["flags"][:-4])
        + " --model M --seed S`),",
        "early stopping on validation loss with the best weights restored, `train`'s test evaluation.",
        "",
        "| model | seed | test accuracy | attended density | epochs | median epoch seconds | train seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in train["runs"]:
        lines.append(
            f"| {run['model']} | {run['seed']} | {number(run['test_accuracy'], 4)} | "
            f"{number(run['test_attended_density'], 3)} | {run['epochs_trained']} | "
            f"{run['median_epoch_seconds']:.1f} | {run['train_seconds']:.0f} |"
        )
    return [*lines, ""]


def report_lines(results):
    """The README's lines: header, then each part that ran."""
    lines = _header(results)
    if "tests" in results:
        lines += _tests(results["tests"])
    if "bench" in results:
        lines += _bench(results["bench"])
    if "train" in results:
        lines += _training(results["train"])
    return lines
