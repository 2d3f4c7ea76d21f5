"""GloVe vectors and the embedding matrix of a vocabulary."""

from ganet_tf.embeddings.glove import embedding_matrix
from ganet_tf.embeddings.glove import load_glove

__all__ = ["embedding_matrix", "load_glove"]
