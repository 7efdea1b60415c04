"""text_dataset_from_directory: labels from subfolders, label modes, splits, max_length, links."""

import os

import pytest

import layerflow as tf

TEXTS = {
    "neg": ["bad film", "awful", "boring plot"],
    "pos": ["great", "loved it", "superb acting!"],
}


@pytest.fixture
def root(tmp_path):
    for label, texts in TEXTS.items():
        (tmp_path / label).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / label / f"{i}.txt").write_text(text, encoding="utf-8")
        (tmp_path / label / "skip.md").write_text("not a .txt file")
    return tmp_path


def collect(ds):
    xs, ys = [], []
    for x, y in ds:
        xs += [t.decode() for t in x.numpy().tolist()]
        ys += y.numpy().tolist()
    return xs, ys


def test_labels_inferred_in_order_without_shuffle(root):
    ds = tf.keras.utils.text_dataset_from_directory(root, batch_size=4, shuffle=False)
    assert ds.class_names == ["neg", "pos"]
    x, y = next(iter(ds))
    assert x.dtype == tf.string and x.shape == (4,) and y.dtype == tf.int32
    xs, ys = collect(ds)
    assert xs == TEXTS["neg"] + TEXTS["pos"] and ys == [0, 0, 0, 1, 1, 1]


def test_label_modes_max_length_and_class_names(root):
    cat = tf.keras.utils.text_dataset_from_directory(
        root, label_mode="categorical", class_names=["pos", "neg"], shuffle=False, max_length=4
    )
    xs, ys = collect(cat)
    assert xs[:3] == [t[:4] for t in TEXTS["pos"]]
    assert ys[0] == [1.0, 0.0] and ys[-1] == [0.0, 1.0]
    binary = tf.keras.utils.text_dataset_from_directory(root, label_mode="binary", shuffle=False)
    assert next(iter(binary))[1].shape == (6, 1)
    only_text = tf.keras.utils.text_dataset_from_directory(root, labels=None, batch_size=None,
                                                           shuffle=False)  # fmt: skip
    assert [t.numpy() for t in only_text][0] == b"bad film"


def test_shuffle_and_validation_split_partition_the_files(root):
    train, val = tf.keras.utils.text_dataset_from_directory(
        root, validation_split=0.34, subset="both", seed=3, batch_size=2
    )
    tx, ty = collect(train)
    vx, vy = collect(val)
    assert len(tx) == 4 and len(vx) == 2
    assert sorted(tx + vx) == sorted(TEXTS["neg"] + TEXTS["pos"])
    for text, label in zip(tx + vx, ty + vy):
        assert text in TEXTS[["neg", "pos"][label]]
    again = tf.keras.utils.text_dataset_from_directory(
        root, validation_split=0.34, subset="validation", seed=3, batch_size=2
    )
    assert sorted(collect(again)[0]) == sorted(vx)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_follow_links(root, tmp_path_factory):
    extra = tmp_path_factory.mktemp("extra")
    (extra / "more.txt").write_text("linked")
    os.symlink(extra, root / "pos" / "link")
    plain = tf.keras.utils.text_dataset_from_directory(root, shuffle=False)
    linked = tf.keras.utils.text_dataset_from_directory(root, shuffle=False, follow_links=True)
    assert "linked" not in collect(plain)[0] and "linked" in collect(linked)[0]


def test_errors(root):
    with pytest.raises(ValueError, match="label_mode"):
        tf.keras.utils.text_dataset_from_directory(root, label_mode="sparse")
    with pytest.raises(ValueError, match="seed"):
        tf.keras.utils.text_dataset_from_directory(root, validation_split=0.2, subset="training")
    with pytest.raises(ValueError, match="class_names"):
        tf.keras.utils.text_dataset_from_directory(root, labels=[0] * 6, class_names=["a"])
    with pytest.raises(ValueError, match="lengths of `labels`"):
        tf.keras.utils.text_dataset_from_directory(root, labels=[0, 1])
    empty = root / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="No text files"):
        tf.keras.utils.text_dataset_from_directory(empty, labels=None)
