from ganet_tf.embeddings.glove import embedding_matrix
from ganet_tf.embeddings.glove import load_glove
