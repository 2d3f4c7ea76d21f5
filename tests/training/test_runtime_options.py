import glob

import keras
import numpy as np
import pytest
import tensorflow as tf

from ganet_tf.models import build_model
from ganet_tf.training import TrainConfig
from ganet_tf.training import train_and_evaluate
from ganet_tf.training.train import compile_model


class _Seen(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.policy = self.model.dtype_policy.name
        self.optimizer = type(self.model.optimizer).__name__


def _scalars(folder):
    """{tag: [values]} of the TensorBoard event files under `folder`."""
    found = {}
    for path in glob.glob(f"{folder}/**/events.out.tfevents.*", recursive=True):
        for record in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                array = tf.make_ndarray(value.tensor)
                if array.dtype.kind == "f" and array.size == 1:
                    found.setdefault(value.tag, []).append(float(array))
    return found


@pytest.mark.usefixtures("eager_functions")  # two epochs of one batch: tracing would cost more
def test_tensorboard_logs_and_mixed_precision(data_dir, tmp_path):
    seen = _Seen()
    config = TrainConfig(
        dataset="trec",
        data_dir=data_dir,
        limit=32,
        epochs=2,
        hidden=4,
        auxiliary_hidden_dim=4,
        glove_vocabulary=0,
        verbose=0,
        tensorboard=str(tmp_path / "tb"),
        mixed_precision=True,
    )
    result = train_and_evaluate(config, callbacks=[seen])
    assert seen.policy == "mixed_float16" and seen.optimizer == "LossScaleOptimizer"
    assert keras.config.dtype_policy().name == "float32"  # restored
    scalars = _scalars(tmp_path / "tb")
    # Keras names the epoch scalars epoch_*, in train/ and validation/.
    for tag in ("epoch_loss", "epoch_accuracy", "epoch_density", "epoch_attended_density"):
        assert len(scalars[tag]) == 4, tag  # 2 epochs, train and validation
    assert np.allclose(
        sorted(scalars["epoch_density"]),
        sorted(result["history"]["density"] + result["history"]["val_density"]),
        atol=1e-4,
    )


def test_jit_compile_reaches_compile():
    model = build_model("soft", 3, embeddings=np.zeros([10, 4], "float32"), hidden_dim=2)
    assert compile_model(model, 1e-3, jit_compile=True).jit_compile is True
    assert compile_model(model, 1e-3).jit_compile is False  # "auto" on a CPU
