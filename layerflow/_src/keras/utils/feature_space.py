"""`tf.keras.utils.FeatureSpace`: preprocess and encode a dict of structured features, as
tf_keras 2.

Each feature names an input dtype, a preprocessing layer (Normalization, Discretization,
IntegerLookup, StringLookup, Hashing, Rescaling, Identity) and an output mode; crosses hash
feature pairs with HashedCrossing. `adapt(dataset)` fits the adaptable preprocessors on a
`tf.data.Dataset` of dicts; features whose output mode is "one_hot" are then multi-hot encoded
(CategoryEncoding) to their preprocessor's cardinality, and the encoded features are
concatenated ("concat") or returned by name ("dict"), sorted by name, crosses last.
`get_inputs()`/`get_encoded_features()` give the same as a functional graph.
"""

from __future__ import annotations

import copy
from typing import Any

from layerflow._src.data.dataset import Dataset
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.functional import Input
from layerflow._src.keras.layers import layer_serialization
from layerflow._src.keras.layers.core_extra import Identity
from layerflow._src.keras.layers.merging import Concatenate
from layerflow._src.keras.layers.preprocessing.base import PreprocessingLayer
from layerflow._src.keras.layers.preprocessing.category_encoding import CategoryEncoding
from layerflow._src.keras.layers.preprocessing.discretization import Discretization
from layerflow._src.keras.layers.preprocessing.hashing import HashedCrossing, Hashing
from layerflow._src.keras.layers.preprocessing.image_preprocessing import Rescaling
from layerflow._src.keras.layers.preprocessing.integer_lookup import IntegerLookup
from layerflow._src.keras.layers.preprocessing.normalization import Normalization
from layerflow._src.keras.layers.preprocessing.string_lookup import StringLookup
from layerflow._src.ops import array_ops
from layerflow._src.utils import naming

__all__ = ["Cross", "Feature", "FeatureSpace"]


class Cross:
    """A cross of features hashed into `crossing_dim` bins (`FeatureSpace.cross`)."""

    def __init__(self, feature_names: Any, crossing_dim: int, output_mode: str = "one_hot"):
        if output_mode not in {"int", "one_hot"}:
            raise ValueError(
                "Invalid value for argument `output_mode`. Expected one of {'int', 'one_hot'}. "
                f"Received: output_mode={output_mode}"
            )
        self.feature_names = tuple(feature_names)
        self.crossing_dim = crossing_dim
        self.output_mode = output_mode

    @property
    def name(self) -> str:
        return "_X_".join(self.feature_names)

    def get_config(self) -> dict[str, Any]:
        return {
            "feature_names": self.feature_names,
            "crossing_dim": self.crossing_dim,
            "output_mode": self.output_mode,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Cross:
        return cls(**config)


class Feature:
    """One feature: its input dtype, its preprocessing layer and its output mode."""

    def __init__(self, dtype: str, preprocessor: Any, output_mode: str) -> None:
        if output_mode not in {"int", "one_hot", "float"}:
            raise ValueError(
                "Invalid value for argument `output_mode`. Expected one of "
                f"{{'int', 'one_hot', 'float'}}. Received: output_mode={output_mode}"
            )
        self.dtype = dtype
        if isinstance(preprocessor, dict):
            preprocessor = layer_serialization.deserialize(preprocessor)
        self.preprocessor = preprocessor
        self.output_mode = output_mode

    def get_config(self) -> dict[str, Any]:
        return {
            "dtype": self.dtype,
            "preprocessor": layer_serialization.serialize(self.preprocessor),
            "output_mode": self.output_mode,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Feature:
        return cls(**config)


def _name(name: str | None, kind: str) -> str:
    return name or naming.unique_name(kind)


def _serialized(obj: Any) -> dict[str, Any]:
    return {"class_name": type(obj).__name__, "config": obj.get_config()}


def _deserialized(value: Any, cls: type) -> Any:
    if isinstance(value, dict) and value.get("class_name") == cls.__name__:
        return cls.from_config(value["config"])
    return value


class FeatureSpace(Layer):
    """Preprocessing and encoding of a dict of structured features (tf_keras's FeatureSpace).

    >>> import layerflow as tf
    >>> raw = {"f": [0.0, 0.5, 1.0], "c": [1, 2, 1]}
    >>> space = FeatureSpace({"f": "float_normalized", "c": "integer_categorical"})
    >>> space.adapt(tf.data.Dataset.from_tensor_slices(raw))
    >>> space(raw).shape  # one-hot "c" (3 values: OOV, 1, 2), then "f"
    TensorShape([3, 4])
    """

    @classmethod
    def cross(cls, feature_names: Any, crossing_dim: int, output_mode: str = "one_hot") -> Cross:
        return Cross(feature_names, crossing_dim, output_mode=output_mode)

    @classmethod
    def feature(cls, dtype: str, preprocessor: Any, output_mode: str) -> Feature:
        return Feature(dtype, preprocessor, output_mode)

    @classmethod
    def float(cls, name: str | None = None) -> Feature:
        name = _name(name, "float")
        pre = Identity(dtype="float32", name=f"{name}_preprocessor")
        return Feature(dtype="float32", preprocessor=pre, output_mode="float")

    @classmethod
    def float_rescaled(cls, scale: float = 1.0, offset: float = 0.0,
                       name: str | None = None) -> Feature:  # fmt: skip
        name = _name(name, "float_rescaled")
        pre = Rescaling(scale=scale, offset=offset, name=f"{name}_preprocessor")
        return Feature(dtype="float32", preprocessor=pre, output_mode="float")

    @classmethod
    def float_normalized(cls, name: str | None = None) -> Feature:
        name = _name(name, "float_normalized")
        pre = Normalization(axis=-1, name=f"{name}_preprocessor")
        return Feature(dtype="float32", preprocessor=pre, output_mode="float")

    @classmethod
    def float_discretized(
        cls, num_bins: int, bin_boundaries: Any = None, output_mode: str = "one_hot",
        name: str | None = None,
    ) -> Feature:  # fmt: skip
        name = _name(name, "float_discretized")
        pre = Discretization(num_bins=num_bins, bin_boundaries=bin_boundaries,
                             name=f"{name}_preprocessor")  # fmt: skip
        return Feature(dtype="float32", preprocessor=pre, output_mode=output_mode)

    @classmethod
    def integer_categorical(
        cls, max_tokens: int | None = None, num_oov_indices: int = 1,
        output_mode: str = "one_hot", name: str | None = None,
    ) -> Feature:  # fmt: skip
        name = _name(name, "integer_categorical")
        pre = IntegerLookup(name=f"{name}_preprocessor", max_tokens=max_tokens,
                            num_oov_indices=num_oov_indices)  # fmt: skip
        return Feature(dtype="int64", preprocessor=pre, output_mode=output_mode)

    @classmethod
    def string_categorical(
        cls, max_tokens: int | None = None, num_oov_indices: int = 1,
        output_mode: str = "one_hot", name: str | None = None,
    ) -> Feature:  # fmt: skip
        name = _name(name, "string_categorical")
        pre = StringLookup(name=f"{name}_preprocessor", max_tokens=max_tokens,
                           num_oov_indices=num_oov_indices)  # fmt: skip
        return Feature(dtype="string", preprocessor=pre, output_mode=output_mode)

    @classmethod
    def string_hashed(cls, num_bins: int, output_mode: str = "one_hot",
                      name: str | None = None) -> Feature:  # fmt: skip
        name = _name(name, "string_hashed")
        pre = Hashing(name=f"{name}_preprocessor", num_bins=num_bins)
        return Feature(dtype="string", preprocessor=pre, output_mode=output_mode)

    @classmethod
    def integer_hashed(cls, num_bins: int, output_mode: str = "one_hot",
                       name: str | None = None) -> Feature:  # fmt: skip
        name = _name(name, "integer_hashed")
        pre = Hashing(name=f"{name}_preprocessor", num_bins=num_bins)
        return Feature(dtype="int64", preprocessor=pre, output_mode=output_mode)

    def __init__(self, features: dict[str, Any], output_mode: str = "concat",
                 crosses: Any = None, crossing_dim: int = 32, hashing_dim: int = 32,
                 num_discretization_bins: int = 32, name: str | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        if not features:
            raise ValueError("The `features` argument cannot be None or empty.")
        super().__init__(name=name, **kwargs)
        self.crossing_dim = crossing_dim
        self.hashing_dim = hashing_dim
        self.num_discretization_bins = num_discretization_bins
        self._features = {n: self._standardize_feature(n, v) for n, v in features.items()}
        self._crosses = []
        for cross in crosses or ():
            cross = _deserialized(cross, Cross)
            if not isinstance(cross, Cross):
                if not crossing_dim:
                    raise ValueError(
                        "When specifying `crosses`, the argument `crossing_dim` "
                        "(dimensionality of the crossing space) should be specified as well."
                    )
                unknown = [key for key in cross if key not in features]
                if unknown:
                    raise ValueError(
                        "All features referenced in the `crosses` argument should be present "
                        f"in the `features` dict. Received unknown features: {cross}"
                    )
                cross = Cross(cross, crossing_dim=crossing_dim)
            self._crosses.append(cross)
        if output_mode not in {"dict", "concat"}:
            raise ValueError(
                "Invalid value for argument `output_mode`. Expected one of {'dict', 'concat'}. "
                f"Received: output_mode={output_mode}"
            )
        self.output_mode = output_mode
        self.preprocessors = {n: f.preprocessor for n, f in self._features.items()}
        self.crossers = {c.name: HashedCrossing(c.crossing_dim, name=c.name) for c in self._crosses}
        self.one_hot_encoders: dict[str, Any] = {}
        self.__dict__["_fs_inputs"] = None
        self.__dict__["_encoded"] = None
        self.__dict__["_is_adapted"] = False
        self.__dict__["_concat"] = None
        self.__dict__["_names"] = None

    @property
    def features(self) -> dict[str, Feature]:
        return self._features

    @property
    def crosses(self) -> list[Cross]:
        return self._crosses

    @property
    def crosses_by_name(self) -> dict[str, Cross]:
        return {c.name: c for c in self._crosses}

    def _standardize_feature(self, name: str, feature: Any) -> Feature:
        feature = _deserialized(feature, Feature)
        if isinstance(feature, Feature):
            return feature
        makers = {
            "float": lambda: self.float(name=name),
            "float_normalized": lambda: self.float_normalized(name=name),
            "float_rescaled": lambda: self.float_rescaled(name=name),
            "float_discretized": lambda: self.float_discretized(
                name=name, num_bins=self.num_discretization_bins
            ),
            "integer_categorical": lambda: self.integer_categorical(name=name),
            "string_categorical": lambda: self.string_categorical(name=name),
            "integer_hashed": lambda: self.integer_hashed(self.hashing_dim, name=name),
            "string_hashed": lambda: self.string_hashed(self.hashing_dim, name=name),
        }
        make = makers.get(feature) if isinstance(feature, str) else None
        if make is None:
            raise ValueError(f"Invalid feature type: {feature}")
        return make()

    def _adaptable(self) -> list[str]:
        out = []
        for name in self._features:
            pre = self.preprocessors[name]
            if isinstance(pre, Normalization) and getattr(pre, "input_mean", None) is not None:
                continue
            # (layerflow's Hashing/HashedCrossing/CategoryEncoding inherit an `adapt` that
            # refuses; tf_keras's have none)
            if (
                hasattr(pre, "adapt")
                and type(pre).update_state is not PreprocessingLayer.update_state
            ):
                out.append(name)
        return out

    def adapt(self, dataset: Any) -> None:
        """Fit the adaptable preprocessors on `dataset`, a `tf.data.Dataset` of feature dicts
        (unbatched or batched)."""
        if not isinstance(dataset, Dataset):
            raise ValueError(
                "`adapt()` can only be called on a tf.data.Dataset. "
                f"Received instead: {dataset} (of type {type(dataset)})"
            )
        for name in self._adaptable():
            feature_ds = dataset.map(lambda x, name=name: x[name])
            first = next(iter(feature_ds.take(1)))
            if first.shape.rank == 0:
                feature_ds = feature_ds.batch(32)
            if first.shape.rank in (0, 1):
                feature_ds = feature_ds.map(lambda x: array_ops.expand_dims(x, -1))
            self.preprocessors[name].adapt(feature_ds)
        self.__dict__["_is_adapted"] = True
        self.get_encoded_features()  # builds the encoders
        self.built = True

    def get_inputs(self) -> dict[str, Any]:
        """The functional-API Inputs, one per feature, shape (None, 1)."""
        self._check_if_built()
        return self._inputs()

    def _inputs(self) -> dict[str, Any]:
        if self._fs_inputs is None:
            self.__dict__["_fs_inputs"] = {
                n: Input(shape=(1,), dtype=f.dtype, name=n) for n, f in self._features.items()
            }
        return self._fs_inputs

    def get_encoded_features(self) -> Any:
        """The encoded features of `get_inputs()` (symbolic), to build a model on."""
        self._check_if_adapted()
        if self._encoded is None:
            pre = self._preprocess_features(self._inputs())
            self.__dict__["_encoded"] = self._merge_features(pre, self._cross_features(pre))
        return self._encoded

    def _preprocess_features(self, features: dict[str, Any]) -> dict[str, Any]:
        return {name: self.preprocessors[name](features[name]) for name in features}

    def _cross_features(self, features: dict[str, Any]) -> dict[str, Any]:
        return {
            c.name: self.crossers[c.name]([features[n] for n in c.feature_names])
            for c in self._crosses
        }

    def _cardinality(self, name: str, feature: Any) -> int:
        pre = self.preprocessors.get(name) or self.crossers.get(name)
        if not feature.dtype.name.startswith("int"):
            raise ValueError(
                f"Feature '{name}' has `output_mode='one_hot'`. Thus its preprocessor should "
                f"return an int64 dtype. Instead it returns a {feature.dtype.name} dtype."
            )
        if isinstance(pre, IntegerLookup | StringLookup):
            return pre.vocabulary_size()
        if isinstance(pre, CategoryEncoding):
            return pre.num_tokens
        if isinstance(pre, Discretization | HashedCrossing | Hashing):
            return pre.num_bins
        raise ValueError(
            f"Feature '{name}' has `output_mode='one_hot'`. However it isn't a standard feature "
            "and the dimensionality of its output space is not known, thus it cannot be "
            "one-hot encoded. Try using `output_mode='int'`."
        )

    def _merge_features(self, preprocessed: dict[str, Any], crossed: dict[str, Any]) -> Any:
        if self._names is None:
            self.__dict__["_names"] = (sorted(preprocessed), sorted(crossed))
        pre_names, cross_names = self._names
        names = pre_names + cross_names
        values = [preprocessed[n] for n in pre_names] + [crossed[n] for n in cross_names]
        first_time = self._concat is None and not self.one_hot_encoders
        specs = {**self._features, **self.crosses_by_name}
        out: dict[str, Any] = {}
        for name, value in zip(names, values):
            if first_time and specs[name].output_mode == "one_hot":
                self.one_hot_encoders[name] = CategoryEncoding(
                    num_tokens=self._cardinality(name, value), output_mode="multi_hot"
                )
            encoder = self.one_hot_encoders.get(name)
            if encoder is not None:
                value = encoder(value)
            if self.output_mode == "concat":
                dtype = value.dtype.name
                if dtype.startswith("int") or dtype == "string":
                    raise ValueError(
                        f"Cannot concatenate features because feature '{name}' has not been "
                        f"encoded (it has dtype {dtype}). Consider using `output_mode='dict'`."
                    )
            out[name] = value
        if self.output_mode == "dict":
            return out
        if self._concat is None:
            self.__dict__["_concat"] = Concatenate(axis=-1)
        return self._concat(list(out.values()))

    def _check_if_adapted(self) -> None:
        if not self._is_adapted:
            if self._adaptable():
                raise ValueError(
                    "You need to call `.adapt(dataset)` on the FeatureSpace before you can "
                    "start using it."
                )
            self.__dict__["_is_adapted"] = True

    def _check_if_built(self) -> None:
        if not self.built:
            self._check_if_adapted()
            self.get_encoded_features()
            self.built = True

    def __call__(self, data: Any) -> Any:
        self._check_if_built()
        if not isinstance(data, dict):
            raise ValueError(
                "A FeatureSpace can only be called with a dict. "
                f"Received: data={data} (of type {type(data)}"
            )
        data = {key: convert_to_tensor(value) for key, value in data.items()}
        missing = sorted(set(self._features) - set(data))
        if missing:
            raise ValueError(
                f"FeatureSpace '{self.name}' needs the features {missing}, missing from the "
                f"input dict (it has {sorted(data)})."
            )
        rebatched = False
        for name, x in data.items():
            if x.shape.rank == 0:
                data[name] = array_ops.reshape(x, [1, 1])
                rebatched = True
            elif x.shape.rank == 1:
                data[name] = array_ops.expand_dims(x, -1)
        pre = self._preprocess_features({n: data[n] for n in self._features})
        merged = self._merge_features(pre, self._cross_features(pre))
        if rebatched:
            if self.output_mode == "concat":
                return array_ops.squeeze(merged, axis=0)
            for name, x in merged.items():
                if x.shape.rank == 2 and x.shape[0] == 1:
                    merged[name] = array_ops.squeeze(x, axis=0)
        return merged

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "features": {n: _serialized(f) for n, f in self._features.items()},
            "output_mode": self.output_mode,
            "crosses": [_serialized(c) for c in self._crosses],
            "crossing_dim": self.crossing_dim,
            "hashing_dim": self.hashing_dim,
            "num_discretization_bins": self.num_discretization_bins,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> FeatureSpace:
        return cls(**copy.deepcopy(config))

    def save(self, filepath: Any) -> None:
        """Not supported: the `.keras` writer of layerflow saves models, and the adapted state
        of lookups (string vocabularies) is not kept in variables."""
        raise NotImplementedError(
            f"FeatureSpace.save({filepath!r}): layerflow cannot write a FeatureSpace to a .keras "
            "file yet. Keep `feature_space.get_config()` (JSON) and adapt the rebuilt "
            "FeatureSpace.from_config(config) on the same data."
        )
