"""`models.config`: the TF Serving model config of every exported model."""

import os
import tempfile

from ganet_tf.extras import import_extra

MODEL_CONFIG_FILE = "models.config"


def version_numbers(model_root):
    """Sorted integer versions of `model_root` that hold a SavedModel.

    TF Serving only considers sub-folders named by an integer; hidden
    staging folders of an export in progress are ignored like it does.
    """
    if not os.path.isdir(model_root):
        return []
    return sorted(
        int(entry)
        for entry in os.listdir(model_root)
        if entry.isdigit() and os.path.isfile(os.path.join(model_root, entry, "saved_model.pb"))
    )


def exported_models(base):
    """Names of the folders of `base` that hold at least one version."""
    if not os.path.isdir(base):
        return []
    return sorted(
        entry for entry in os.listdir(base) if not entry.startswith(".") and version_numbers(os.path.join(base, entry))
    )


def model_config_text(base):
    """The `ModelServerConfig` text proto listing the models under `base`.

    `base_path`s are absolute: TF Serving resolves them on its own machine
    (mount `base` at the same path in a container).
    """
    from google.protobuf import text_format

    (model_server_config_pb2,) = import_extra(
        "serving", "models.config", "tensorflow_serving.config.model_server_config_pb2"
    )

    config = model_server_config_pb2.ModelServerConfig()
    for name in exported_models(base):
        entry = config.model_config_list.config.add()
        entry.name = name
        entry.base_path = os.path.abspath(os.path.join(base, name))
        entry.model_platform = "tensorflow"
    return text_format.MessageToString(config, as_utf8=True)


def write_model_config(base):
    """Regenerates `base/models.config` from the folders of `base`.

    The file is replaced atomically, so a server that polls it
    (`--model_config_file_poll_wait_seconds`) never reads half a file.

    Args:
        base: the folder that holds `NAME/VERSION/` SavedModels.

    Returns:
        The path of the config file.

    Example:

    >>> # Not run by the tests: needs exported models and the `serving` extra.
    >>> print(open(write_model_config("saved_models")).read())  # doctest: +SKIP
    model_config_list {
      config {
        name: "trec_ganet"
        base_path: "/abs/path/saved_models/trec_ganet"
        model_platform: "tensorflow"
      }
    }
    """
    text = model_config_text(base)
    path = os.path.join(base, MODEL_CONFIG_FILE)
    descriptor, staging = tempfile.mkstemp(prefix=".models-", dir=base)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(staging, 0o644)
        os.replace(staging, path)
    except BaseException:
        if os.path.exists(staging):
            os.remove(staging)
        raise
    return path
