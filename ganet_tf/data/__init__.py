from ganet_tf.data.datasets import DATASETS
from ganet_tf.data.datasets import load_dataset
from ganet_tf.data.datasets import load_files
from ganet_tf.data.text_splits import TextSplits
from ganet_tf.data.vectorizer import build_vectorizer
from ganet_tf.data.vectorizer import load_vectorizer
from ganet_tf.data.vectorizer import make_dataset
from ganet_tf.data.vectorizer import save_vectorizer
