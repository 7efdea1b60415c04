"""Run by test_preemption.py: trains a counter under a PreemptionCheckpointHandler.

argv: checkpoint_dir, total_steps. Prints "step N" after each step (flushing) and waits a
little so the parent can send SIGTERM mid-training; prints "done N value" at the end.
"""

import sys
import time

import layerflow as tf

directory, total = sys.argv[1], int(sys.argv[2])
v = tf.Variable(0.0)
handler = tf.distribute.experimental.PreemptionCheckpointHandler(
    None, tf.train.Checkpoint(v=v), checkpoint_dir=directory
)
print(f"start {handler.total_run_calls} {float(v.numpy())}", flush=True)


def step():
    v.assign_add(1.0)


with handler.watch_preemption_scope():
    while handler.total_run_calls < total:
        handler.run(step)
        print(f"step {handler.total_run_calls}", flush=True)
        time.sleep(0.05)
print(f"done {handler.total_run_calls} {float(v.numpy())}", flush=True)
