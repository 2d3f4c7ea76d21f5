from ganet_tf.training.epoch_timer import EpochTimer
from ganet_tf.training.evaluate import evaluate_model
from ganet_tf.training.train import TrainConfig
from ganet_tf.training.train import compile_model
from ganet_tf.training.train import train_and_evaluate
