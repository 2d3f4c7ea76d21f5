"""`warn_all_closed`: one line when many test rows have every gate closed."""

import sys

# Above this share of all-closed test rows, `train` and `seq2seq` warn on stderr.
ALL_CLOSED_WARNING_RATE = 0.05
TEXTS_ALL_CLOSED = (
    "texts (pooled by the fallback, so test_density undercounts them; "
    "see test_attended_density): with --target-density RHO (the default) the test gates "
    "(nucleus, or --inference-mode top_k) open at least one token per text."
)


def warn_all_closed(rate, rows=TEXTS_ALL_CLOSED):
    """One stderr line when many test rows have every gate closed.

    Args:
        rate: the share of test rows whose gates are all closed, or None
            (a model without gates): above `ALL_CLOSED_WARNING_RATE` it
            is said.
        rows: what the rows are and what to do, after "of the test "
            (default: the texts of `train`).
    """
    if rate is not None and rate > ALL_CLOSED_WARNING_RATE:
        print(f"ganet_tf: warning: every gate is closed in {rate:.1%} of the test {rows}", file=sys.stderr)
