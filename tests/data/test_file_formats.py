"""The user's files are read as written: nothing split, merged or renamed."""

import numpy as np
import pytest

from ganet_tf.data import load_files
from ganet_tf.data.datasets import read_delimited
from ganet_tf.data.datasets import read_label_text
from ganet_tf.errors import GANetInputError


def write(path, content, encoding="utf-8"):
    with open(path, "w", encoding=encoding, newline="") as handle:
        handle.write(content)
    return str(path)


def one_line(text):
    assert text.count("\n") == 1, text
    return text


def test_a_byte_order_mark_is_not_part_of_a_label_or_column(tmp_path):
    path = write(tmp_path / "bom.txt", "\ufeffpos good film\nneg bad film\npos fine\n")
    assert read_label_text(path) == (["good film", "bad film", "fine"], ["pos", "neg", "pos"])
    path = write(tmp_path / "bom.csv", "\ufefftext,label\ngood,pos\nbad,neg\n")
    assert read_delimited(path) == (["good", "bad"], ["pos", "neg"])


def test_lines_end_only_at_cr_and_lf(tmp_path):
    path = write(tmp_path / "u.txt", "pos a\u2028b\r\nneg c\u0085d\x0be\rpos f\x1cg\n")
    texts, labels = read_label_text(path)
    assert texts == ["a\u2028b", "c\u0085d\x0be", "f\x1cg"] and labels == ["pos", "neg", "pos"]
    path = write(tmp_path / "u.csv", 'text,label\r\n"a\u2028b",pos\r\nc\u0085d,neg\r\n')
    assert read_delimited(path) == (["a\u2028b", "c\u0085d"], ["pos", "neg"])


def test_quoted_fields_keep_their_line_breaks_and_any_size(tmp_path, capsys):
    long_text = "word " * 60000  # 300 KB, over csv's default 128 KiB limit
    path = write(
        tmp_path / "q.csv",
        f'text,label\n"line one\nline two, ""quoted""",pos\n{long_text},neg\n',
    )
    texts, labels = read_delimited(path)
    assert texts == ['line one\nline two, "quoted"', long_text] and labels == ["pos", "neg"]
    warning = one_line(capsys.readouterr().err)
    assert "1 row(s) span several lines" in warning and "first at line 2" in warning
    path = write(tmp_path / "q.tsv", f'label\ttext\npos\t"a\r\nb"\nneg\t{long_text}\n')
    assert read_delimited(path, delimiter="\t") == (["a\r\nb", long_text], ["pos", "neg"])


@pytest.mark.parametrize(
    "content, message",
    [
        ('text,label\ngood,pos\n"open,neg\nx,pos\ny,neg\n', ":3: a quoted field starts here"),
        ('text,label\ngood,pos\n"open,neg\nx,pos\n"y"z,neg\n', ":3: not valid CSV"),
    ],
)
def test_an_unclosed_quote_is_one_error_line_naming_the_line(tmp_path, content, message):
    with pytest.raises(GANetInputError, match=message) as error:
        read_delimited(write(tmp_path / "bad.csv", content))
    assert "\n" not in str(error.value)


def test_tab_separated_labels_and_lines_without_text(tmp_path, capsys):
    content = "neg\t-lrb- dull -rrb-\npos\tgood\nneg \t bad\npos\n\nneg\t  \npos fine\n"
    texts, labels = read_label_text(write(tmp_path / "tab.txt", content))
    assert labels == ["neg", "pos", "neg", "pos"]
    assert texts == ["-lrb- dull -rrb-", "good", "bad", "fine"]
    warning = one_line(capsys.readouterr().err)
    assert warning.startswith("ganet_tf: warning: ") and "skipped 2 lines" in warning
    assert "line 4, 6" in warning
    path = write(tmp_path / "blank.csv", "text,label\ngood,pos\n  ,neg\nbad,neg\n")
    assert read_delimited(path) == (["good", "bad"], ["pos", "neg"])
    assert "skipped 1 row " in one_line(capsys.readouterr().err)


def test_numeric_labels_are_ordered_by_number(tmp_path):
    lines = [f"{label} text number {label} {i}" for i in range(10) for label in range(12)]
    splits = load_files(write(tmp_path / "n.txt", "\n".join(lines)), validation_fraction=0.1)
    assert splits.class_names == [str(label) for label in range(12)]
    for text, class_id in zip(splits.train_texts, splits.train_labels, strict=True):
        assert text.split()[2] == str(class_id)


def test_few_examples_per_class_draw_one_warning(tmp_path, capsys):
    splits = load_files(write(tmp_path / "three.txt", "pos good\nneg bad\npos fine\n"), validation_fraction=0.3)
    assert len(splits.train_texts) == 2
    warning = one_line(capsys.readouterr().err)
    assert "fewer than 10 examples" in warning and "'neg': 1" in warning
    lines = [f"{'pos' if i % 2 else 'neg'} text {i}" for i in range(40)]
    load_files(write(tmp_path / "enough.txt", "\n".join(lines)))
    assert capsys.readouterr().err == ""


def test_encoding_and_column_names(tmp_path):
    path = write(tmp_path / "latin.txt", "pos caf\xe9 au lait\nneg th\xe9\n", "latin-1")
    with pytest.raises(GANetInputError, match="--encoding") as error:
        load_files(path)
    assert "\n" not in str(error.value)
    splits = load_files(path, encoding="latin-1", validation_fraction=0.5)
    assert sorted(splits.train_texts + splits.validation_texts) == ["café au lait", "thé"]
    with pytest.raises(GANetInputError, match="Unknown --encoding 'klingon'"):
        load_files(path, encoding="klingon")
    path = write(tmp_path / "cols.csv", "id,review,stars\n1,good,5\n2,bad,1\n")
    splits = load_files(path, text_column="review", label_column="stars", validation_fraction=0.5)
    assert splits.class_names == ["1", "5"]
    with pytest.raises(GANetInputError, match="--text-column"):
        load_files(path)


def test_a_folder_given_as_a_file(tmp_path):
    with pytest.raises(GANetInputError, match="is a folder, not a file: give --train-file"):
        load_files(str(tmp_path))


def test_class_ids_of_a_mixed_label_set_stay_alphabetical(tmp_path):
    lines = [f"{label} text {i}" for i in range(10) for label in ("b", "10", "a", "2")]
    splits = load_files(write(tmp_path / "mixed.txt", "\n".join(lines)))
    assert splits.class_names == ["10", "2", "a", "b"]
    assert np.all(splits.train_labels < 4)


def test_control_characters_inside_texts_are_kept_and_counted_in_one_warning(tmp_path, capsys):
    content = "pos good\x00film\nneg bad \x07film\x1b[0m\npos fine film\nneg \x00\n"
    texts, labels = read_label_text(write(tmp_path / "c.txt", content))
    # As written: nothing cut at the NUL, no text dropped (the standardisation spaces them).
    assert texts == ["good\x00film", "bad \x07film\x1b[0m", "fine film", "\x00"]
    assert labels == ["pos", "neg", "pos", "neg"]
    warning = one_line(capsys.readouterr().err)
    assert warning.startswith("ganet_tf: warning: ") and "3 text(s) hold control characters" in warning
    assert "first at line 1: U+0000" in warning
    path = write(tmp_path / "c.csv", 'text,label\nfine,pos\n"two\x1b\nlines",neg\n')
    assert read_delimited(path) == (["fine", "two\x1b\nlines"], ["pos", "neg"])
    err = capsys.readouterr().err
    assert "1 text(s) hold control characters (first at line 3: U+001B)" in err
    # TAB and the line breaks inside a quoted field are the file's own: no warning.
    read_delimited(write(tmp_path / "t.tsv", 'label\ttext\npos\t"a\tb\r\nc"\n'), delimiter="\t")
    assert "control characters" not in capsys.readouterr().err
