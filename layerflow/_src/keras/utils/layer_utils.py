"""`get_source_inputs` (the Input tensors a symbolic tensor comes from) and
`warmstart_embedding_matrix` (carry embedding rows over to a new vocabulary)."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.keras import initializers
from layerflow._src.keras.engine.keras_tensor import KerasTensor


def get_source_inputs(tensor: Any, layer: Any = None, node_index: Any = None) -> Any:
    """The `Input` tensors that `tensor` was computed from, in order, without repeats.

    A value that is not a symbolic Keras tensor is returned as it is, as in Keras.

    >>> import layerflow as tf
    >>> a, b = tf.keras.Input((2,)), tf.keras.Input((2,))
    >>> out = tf.keras.layers.Add()([a, tf.keras.layers.Dense(2)(b)])
    >>> [t is a or t is b for t in tf.keras.utils.get_source_inputs(out)]
    [True, True]
    """
    if not isinstance(tensor, KerasTensor) or tensor._keras_history is None:
        return tensor
    sources: list[Any] = []
    stack = [tensor]
    seen: set[int] = set()
    while stack:  # iterative, depth first, left to right as Keras's recursion
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        node = t.node
        parents = node.input_tensors if node is not None else []
        if node is None or node.inputs is None or not parents:
            if all(t is not s for s in sources):
                sources.append(t)
            continue
        stack.extend(reversed(parents))
    return sources


def _vocab(vocab: Any, what: str) -> list:
    if isinstance(vocab, TensorLike):
        vocab = vocab.numpy()
    if isinstance(vocab, np.ndarray | tuple | list):
        return [v.item() if isinstance(v, np.generic) else v for v in vocab]
    if isinstance(vocab, str):
        try:
            with open(vocab, encoding="utf-8") as f:
                return [line.rstrip("\n") for line in f]
        except OSError:
            raise ValueError(f"Vocabulary file {vocab} does not exist.") from None
    raise ValueError(
        f"{what} must be a list, tuple, array, tensor or a vocabulary file path, got "
        f"{type(vocab).__name__}."
    )


def warmstart_embedding_matrix(base_vocabulary: Any, new_vocabulary: Any,
                               base_embeddings: Any,
                               new_embeddings_initializer: Any = "uniform") -> Tensor:  # fmt: skip
    """An embedding matrix for `new_vocabulary`: rows of words also in `base_vocabulary` are
    copied from `base_embeddings`, the others come from `new_embeddings_initializer`.

    >>> import layerflow as tf
    >>> m = tf.keras.utils.warmstart_embedding_matrix(
    ...     ["a", "b"], ["b", "c"], [[1.0, 1.0], [2.0, 2.0]],
    ...     new_embeddings_initializer=tf.keras.initializers.Constant(0.0))
    >>> m.numpy().tolist()
    [[2.0, 2.0], [0.0, 0.0]]
    """
    base = _vocab(base_vocabulary, "base_vocabulary")
    new = _vocab(new_vocabulary, "new_vocabulary")
    emb = base_embeddings.numpy() if isinstance(base_embeddings, TensorLike) else base_embeddings
    emb = np.asarray(emb)
    if emb.ndim != 2 or emb.shape[0] != len(base):
        raise ValueError(
            f"base_embeddings must have shape ({len(base)}, dim) to match base_vocabulary, got "
            f"{emb.shape}."
        )
    if emb.dtype == np.float64:
        emb = emb.astype(np.float32)
    init = initializers.get(new_embeddings_initializer)
    out = np.array(init(shape=(len(new), emb.shape[1]), dtype=str(emb.dtype)), copy=True)
    where = {key: i for i, key in enumerate(base)}
    for i, key in enumerate(new):
        if key in where:
            out[i] = emb[where[key]]
    return convert_to_tensor(out)
