"""`python -m layerflow.demo` (what `make demo` runs): the book's MLP on Fashion-MNIST, end to end.

Trains Flatten -> Dense(256, relu) -> Dense(10) with SGD (learning rate 0.1, batch 256, 10 epochs)
and SparseCategoricalCrossentropy(from_logits=True), as in the chapter; prints the test accuracy;
saves the weights to `<out>/mlp.params`; loads them into a fresh, unbuilt model and prints its
(identical) accuracy; writes the training curves to `<out>/mlp_training.png`.

Without the data files and without a network it runs on the small real sample of Fashion-MNIST
shipped inside the package, and says so.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import layerflow as tf
from layerflow._src.keras.datasets import fashion_mnist as _fashion_mnist
from layerflow._src.keras.datasets import idx as _idx


def load_arrays(force_sample: bool) -> tuple[tuple, tuple, str]:
    """Fashion-MNIST as uint8 arrays, falling back to the shipped sample, and where it came from."""
    if not force_sample:
        try:
            data = _fashion_mnist.load_data()
            folder = _idx.locate(_fashion_mnist.SOURCE.name)
            return data[0], data[1], f"Fashion-MNIST from {folder}"
        except OSError as err:
            first_line = str(err).splitlines()[0]
            print(f"Fashion-MNIST could not be loaded: {first_line}", file=sys.stderr)
            print(
                "Falling back to the small sample shipped with layerflow; accuracy will be "
                f"lower than on the full data. To use the full data, set {_idx.ENV_DATA} or "
                "connect to the network.",
                file=sys.stderr,
            )
    train, test = _fashion_mnist.load_sample()
    return train, test, "the small Fashion-MNIST SAMPLE shipped with layerflow (not the full set)"


def load_data_fashion_mnist(train: tuple, test: tuple, batch_size: int) -> tuple:
    """The book's pipeline: scale to [0, 1], add a channel axis, int32 labels, shuffled batches."""

    def process(X, y):  # noqa: ANN001, ANN202, N803 - the book's names
        return tf.expand_dims(X, axis=3) / 255, tf.cast(y, dtype="int32")

    return (
        tf.data.Dataset.from_tensor_slices(process(*train))
        .batch(batch_size)
        .shuffle(len(train[0])),
        tf.data.Dataset.from_tensor_slices(process(*test)).batch(batch_size),
    )


def make_net() -> tf.keras.Model:
    return tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(256, activation="relu"),
        tf.keras.layers.Dense(10),
    ])  # fmt: skip


def evaluate_accuracy(net: tf.keras.Model, data_iter: tf.data.Dataset) -> float:
    """The book's `d2l.evaluate_accuracy`: the fraction of correctly classified examples."""
    correct, total = 0, 0
    for X, y in data_iter:
        predicted = tf.cast(tf.argmax(net(X), axis=1), y.dtype)
        correct += int(tf.reduce_sum(tf.cast(predicted == y, tf.int32)))
        total += int(y.shape[0])
    return correct / total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m layerflow.demo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--epochs", type=int, default=10, help="training epochs (default 10)")
    parser.add_argument("--out", default="out", help="output folder (default out/)")
    parser.add_argument("--sample", action="store_true", help="use the shipped sample")
    parser.add_argument("--seed", type=int, default=None, help="global random seed")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    if args.seed is not None:
        tf.random.set_seed(args.seed)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    batch_size, lr, num_epochs = 256, 0.1, args.epochs
    train, test, origin = load_arrays(args.sample)
    print(f"Data: {origin}: {len(train[0])} training and {len(test[0])} test images.")
    train_iter, test_iter = load_data_fashion_mnist(train, test, batch_size)

    net = make_net()
    net.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=lr),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    start = time.perf_counter()
    history = net.fit(train_iter, epochs=num_epochs, validation_data=test_iter, verbose=1)
    seconds = time.perf_counter() - start
    accuracy = evaluate_accuracy(net, test_iter)
    print(f"Trained {num_epochs} epochs in {seconds:.1f} s ({seconds / num_epochs:.2f} s/epoch).")
    print(f"test accuracy: {accuracy:.4f}")

    weights = out / "mlp.params"
    net.save_weights(str(weights))
    print(f"Saved the weights to {weights}")
    net_new = make_net()
    net_new.load_weights(str(weights))
    reloaded = evaluate_accuracy(net_new, test_iter)
    print(f"test accuracy of a fresh model loaded from {weights}: {reloaded:.4f}")

    curves = out / "mlp_training.png"
    try:
        history.plot(curves)
        print(f"Wrote the training curves to {curves}")
    except ImportError as err:
        print(f"No training-curve plot: {err}", file=sys.stderr)

    if reloaded != accuracy:
        print(
            "ERROR: the reloaded model's accuracy differs from the trained one's.", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
