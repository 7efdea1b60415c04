"""`tf.random`: random tensors with TF's seeding rules."""

from layerflow._src.ops.random_generator import (
    Algorithm,
    Generator,
    create_rng_state,
    get_global_generator,
    set_global_generator,
)
from layerflow._src.ops.random_ops import (
    categorical,
    normal,
    set_seed,
    shuffle,
    truncated_normal,
    uniform,
)
from layerflow._src.ops.stateless_random_ops import (
    fold_in,
    gamma,
    poisson,
    split,
    stateless_binomial,
    stateless_categorical,
    stateless_gamma,
    stateless_normal,
    stateless_poisson,
    stateless_truncated_normal,
    stateless_uniform,
)

# isort: split
# --- candidate samplers (h-tfnn) ---
from layerflow._src.ops.candidate_sampling_ops import (
    all_candidate_sampler,
    fixed_unigram_candidate_sampler,
    learned_unigram_candidate_sampler,
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)

# isort: split
from layerflow._src.ops.stateless_truncated_ops import stateless_parameterized_truncated_normal

# Last: `experimental` re-exports names of this partly imported module.
from layerflow.random import experimental
