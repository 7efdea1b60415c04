"""Regenerate fashion-mnist-sample.npz from the full IDX files (run from the project root):

    LAYERFLOW_DATASETS=../shared/data python layerflow/_src/keras/datasets/sample/make_sample.py

500 training and 100 test images per class, drawn without replacement with a fixed seed and
shuffled, so the sample is stratified by class and reproducible.
"""

import pathlib

import numpy as np

from layerflow._src.keras.datasets import fashion_mnist

PER_CLASS_TRAIN, PER_CLASS_TEST, SEED = 500, 100, 20240601


def stratified(x: np.ndarray, y: np.ndarray, k: int, rng: np.random.Generator) -> tuple:
    rows = np.concatenate([rng.choice(np.flatnonzero(y == c), k, replace=False) for c in range(10)])
    rows = rng.permutation(rows)
    return x[rows], y[rows]


def main() -> None:
    (x_train, y_train), (x_test, y_test) = fashion_mnist.load_data()
    rng = np.random.default_rng(SEED)
    xa, ya = stratified(x_train, y_train, PER_CLASS_TRAIN, rng)
    xb, yb = stratified(x_test, y_test, PER_CLASS_TEST, rng)
    out = pathlib.Path(__file__).resolve().parent / "fashion-mnist-sample.npz"
    np.savez_compressed(out, x_train=xa, y_train=ya, x_test=xb, y_test=yb)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
