"""Run under `mpiexec -n 2`: one data-parallel SGD step per batch must equal full-batch SGD."""

import numpy as np

import layerflow as tf
from layerflow._src.distribute.train_step import distributed_train_step

strategy = tf.distribute.MultiWorkerMirroredStrategy()
rank = strategy.extended._first_local_replica
assert strategy.num_replicas_in_sync == 2

with strategy.scope():
    # A different initial value on each rank: the scope must broadcast rank 0's.
    w = tf.Variable(np.full((3, 2), float(rank + 1)) / 4, name="w")
np.testing.assert_array_equal(w.numpy(), np.full((3, 2), 0.25))

x = (np.arange(24, dtype=np.float64).reshape(8, 3) - 11) / 4
y = (np.arange(16, dtype=np.float64).reshape(8, 2) % 5) / 8
ref = tf.Variable(np.full((3, 2), 0.25))


def loss_fn(xs, ys, v):
    return tf.reduce_mean(tf.reduce_sum((tf.matmul(xs, v) - ys) ** 2, axis=1))


for xs, ys in strategy.experimental_distribute_dataset([(x, y)] * 2):
    assert xs.shape == (4, 3)
    np.testing.assert_array_equal(xs.numpy(), x[4 * rank : 4 * rank + 4])
    loss = distributed_train_step(
        strategy,
        lambda a, b: loss_fn(a, b, w),
        [w],
        lambda pairs: [v.assign_sub(0.125 * g) for g, v in pairs],
        (xs, ys),
    )
    with tf.GradientTape() as tape:
        ref_loss = loss_fn(tf.constant(x), tf.constant(y), ref)
    ref.assign_sub(0.125 * tape.gradient(ref_loss, ref))
    assert float(loss) == float(ref_loss), (float(loss), float(ref_loss))
np.testing.assert_array_equal(w.numpy(), ref.numpy())

total = strategy.reduce("SUM", tf.constant(float(rank + 1)), axis=None)
assert float(total) == 3.0
gathered = strategy.gather(tf.constant([float(rank)]), axis=0)
np.testing.assert_array_equal(gathered.numpy(), [0.0, 1.0])
print(f"OK rank {rank}", flush=True)
