from ganet_tf.metrics.all_closed_warning import warn_all_closed


def test_warning_is_one_stderr_line_above_five_percent(capsys):
    warn_all_closed(0.05)
    warn_all_closed(None)
    assert capsys.readouterr().err == ""
    warn_all_closed(0.2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "20.0%" in err and "--target-density" in err


def test_the_rows_name_what_was_closed(capsys):
    warn_all_closed(0.5, "sentences (the fallback).")
    err = capsys.readouterr().err
    assert err == "ganet_tf: warning: every gate is closed in 50.0% of the test sentences (the fallback).\n"
