import sys

from ganet_tf.cli import main

sys.exit(main())
