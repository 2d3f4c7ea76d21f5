import numpy as np
import pytest

from ganet_tf.embeddings import embedding_matrix
from ganet_tf.embeddings import load_glove
from ganet_tf.errors import GANetInputError


def test_packaged_glove_50d():
    words, vectors = load_glove()
    assert vectors.shape == (400000, 50)
    assert words[:3] == ["the", ",", "."]


def test_text_file_dimension_from_the_file_and_vocabulary_filter(tmp_path):
    path = tmp_path / "glove.test.3d.txt"
    path.write_text("the 0.1 0.2 0.3\ncat 1 2 3\ndog -1 -2 -3\n")
    words, vectors = load_glove(str(path))
    assert words == ["the", "cat", "dog"] and vectors.shape == (3, 3)
    words, vectors = load_glove(str(path), vocabulary=["dog", "zebra"])
    assert words == ["dog"]
    np.testing.assert_array_equal(vectors, [[-1, -2, -3]])


def test_embedding_matrix_rows():
    glove = (["cat", "dog"], np.array([[1, 2], [3, 4]], "float32"))
    matrix, coverage = embedding_matrix(["dog", "zebra", "cat"], glove, seed=0)
    assert matrix.shape == (5, 2) and coverage == pytest.approx(2 / 3)
    np.testing.assert_array_equal(matrix[0], [0, 0])
    np.testing.assert_array_equal(matrix[2], [3, 4])
    np.testing.assert_array_equal(matrix[4], [1, 2])
    assert np.all(matrix[3] != 0)
    again, _ = embedding_matrix(["dog", "zebra", "cat"], glove, seed=0)
    np.testing.assert_array_equal(matrix, again)


@pytest.mark.parametrize(
    "content, message",
    [
        ("the 0.1 0.2 0.3\ncat 1 2\n", "2 numbers where line 1 has 3"),
        ("", "empty"),
        ("the 0.1 x\n", "not numeric"),
    ],
)
def test_bad_glove_files(tmp_path, content, message):
    path = tmp_path / "glove.txt"
    path.write_text(content)
    with pytest.raises(GANetInputError, match=message):
        load_glove(str(path))


def test_missing_glove_file(tmp_path):
    with pytest.raises(GANetInputError, match="GloVe file not found"):
        load_glove(str(tmp_path / "nope.txt"))
