"""The book's `train_epoch_ch3` loop, as written, on a small synthetic problem.

It passes `net.trainable_variables` (a tracked list) straight to `tape.gradient` and
`updater.apply_gradients(zip(grads, params))`.
"""

import numpy as np

import layerflow as tf


def test_book_loop_runs_as_written_and_learns():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(512, 20)).astype(np.float32)
    y = (X[:, :10].sum(axis=1) > 0).astype(np.int32)
    net = tf.keras.models.Sequential(
        [
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(2),
        ]  # fmt: skip
    )
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    updater = tf.keras.optimizers.SGD(learning_rate=0.5)
    data = tf.data.Dataset.from_tensor_slices((X, y)).batch(64)
    losses = []
    for _ in range(5):
        total = 0.0
        for X_b, y_b in data:
            with tf.GradientTape() as tape:
                l = loss(y_b, net(X_b))
            params = net.trainable_variables
            grads = tape.gradient(l, params)
            assert isinstance(grads, list) and len(grads) == 4
            updater.apply_gradients(zip(grads, params))
            total += float(l)
        losses.append(total)
    assert losses[-1] < 0.5 * losses[0]
    acc = float(tf.reduce_mean(tf.cast(tf.argmax(net(X), axis=1) == y, tf.float32)))
    assert acc > 0.9
