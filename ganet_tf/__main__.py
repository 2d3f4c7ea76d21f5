"""`python -m ganet_tf COMMAND ...` (`ganet_tf.cli.main`)."""

import sys

from ganet_tf import early_signals

# First thing: a stop signal while the command starts is kept for it.
early_signals.mark_command()
early_signals.install_if_command()

from ganet_tf.cli import main  # noqa: E402

sys.exit(main())
