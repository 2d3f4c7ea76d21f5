"""The test-gate flags of the commands that read a trained run back.

`predict`, `explain`, `export`, `evaluate` and `translate` serve a gated run
under another test-gate rule than its own: `--inference-mode` and its
parameter (`add_test_gate_arguments`), turned into the rule of
`ganet_tf.policy.trained_run.inference_rule` (`inference_rule_of`).
"""

from ganet_tf.command_flags import CHOICES


def add_test_gate_arguments(parser):
    """`--inference-mode` and its parameter, for the commands that read a
    trained run (`predict`, `explain`, `export`, `evaluate`, `translate`)."""
    group = parser.add_argument_group(
        "test gates",
        "serve a gated run (GA-Net, or seq2seq --attention gated) under another test-gate rule than the one it "
        "was trained with, without retraining "
        "(default: the run's own)",
    )
    group.add_argument(
        "--inference-mode",
        choices=CHOICES["ganet_tf.layers.gate_sampler.INFERENCE_MODES"],
        help="p > 0.5, a Bernoulli sample, the round(rho T) most probable tokens, or as many as each text's p say",
    )
    group.add_argument(
        "--inference-density",
        type=float,
        metavar="RHO",
        help="rho of top_k, in (0, 1] (default: the run's --target-density)",
    )
    group.add_argument(
        "--inference-ratio",
        type=float,
        metavar="R",
        help="r of relative, in (0, 1]: open the tokens with p >= r * the text's largest p",
    )
    group.add_argument(
        "--inference-mass",
        type=float,
        metavar="PI",
        help="pi of nucleus, in (0, 1]: open the fewest most probable tokens holding pi of sum p "
        "(default: the run's --target-density)",
    )


def inference_rule_of(args):
    """The rule of `add_test_gate_arguments`' flags (`inference_rule`), or None."""
    from ganet_tf.policy.trained_run import inference_rule

    return inference_rule(args.inference_mode, args.inference_density, args.inference_ratio, args.inference_mass)
