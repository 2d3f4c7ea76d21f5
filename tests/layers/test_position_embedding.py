import keras
import numpy as np
import pytest

from ganet_tf.layers import PositionEmbedding
from tests.layer_harness import run_layer_test

EMBEDDED = np.random.default_rng(3).normal(size=[2, 5, 4]).astype("float32")


def test_returns_the_table_rows_of_positions_0_to_steps_for_every_example():
    layer = PositionEmbedding(max_length=8)
    positions = np.asarray(layer(EMBEDDED))
    table = layer.get_weights()[0]
    assert table.shape == (8, 4)
    np.testing.assert_array_equal(positions, np.broadcast_to(table[:5], EMBEDDED.shape))
    assert np.any(positions[0, 0] != positions[0, 1])
    # A shorter text takes the first rows of the same table.
    np.testing.assert_array_equal(np.asarray(layer(EMBEDDED[:, :3]))[1], table[:3])
    assert layer.compute_output_shape((2, 5, 4)) == (2, 5, 4)


def test_initializer_sets_the_table():
    layer = PositionEmbedding(max_length=6, initializer=keras.initializers.Constant(0.5))
    np.testing.assert_array_equal(np.asarray(layer(EMBEDDED)), np.full(EMBEDDED.shape, 0.5, "float32"))


def test_passes_the_mask_on():
    mask = np.array([[1, 1, 1, 0, 0], [0, 0, 0, 0, 0]], bool)
    np.testing.assert_array_equal(PositionEmbedding(max_length=8).compute_mask(EMBEDDED, mask), mask)


@pytest.mark.backends
def test_layer_harness(tmp_path):
    # No masked-row check: the layer reads no mask (it passes one on, above).
    run_layer_test(
        PositionEmbedding,
        {"max_length": 8, "initializer": keras.initializers.RandomNormal(seed=1)},
        EMBEDDED,
        tmp_path,
    )


@pytest.mark.backends
@pytest.mark.parametrize("max_length", [0, -3, 2.5, "8", None])
def test_bad_max_length(max_length):
    with pytest.raises(ValueError, match="max_length"):
        PositionEmbedding(max_length=max_length)
