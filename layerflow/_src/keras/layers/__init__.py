"""Every built-in Keras layer, gathered from its module (a plain list of imports)."""

from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_layer import Input, InputLayer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.activation import ELU, Activation, LeakyReLU, PReLU, ReLU, Softmax
from layerflow._src.keras.layers.convolutional import Conv1D, Conv2D, DepthwiseConv2D, ZeroPadding2D
from layerflow._src.keras.layers.core import Dense, Flatten
from layerflow._src.keras.layers.embedding import Embedding
from layerflow._src.keras.layers.lambda_layer import Lambda
from layerflow._src.keras.layers.layer_normalization import LayerNormalization
from layerflow._src.keras.layers.merging import (
    Add,
    Average,
    Concatenate,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
    add,
    average,
    concatenate,
    maximum,
    minimum,
    multiply,
    subtract,
)
from layerflow._src.keras.layers.normalization import BatchNormalization
from layerflow._src.keras.layers.pooling import (
    AveragePooling1D,
    AveragePooling2D,
    AvgPool1D,
    AvgPool2D,
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalAvgPool1D,
    GlobalAvgPool2D,
    GlobalMaxPool1D,
    GlobalMaxPool2D,
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    MaxPool1D,
    MaxPool2D,
    MaxPooling1D,
    MaxPooling2D,
)
from layerflow._src.keras.layers.recurrent import (
    GRU,
    LSTM,
    RNN,
    AbstractRNNCell,
    Bidirectional,
    GRUCell,
    LSTMCell,
    SimpleRNN,
    SimpleRNNCell,
    StackedRNNCells,
    TimeDistributed,
    Wrapper,
)
from layerflow._src.keras.layers.regularization import Dropout
from layerflow._src.keras.layers.reshaping import Permute, RepeatVector, Reshape

# isort: split
# --- attention, einsum, shape, noise and normalization layers (h-klayers) ---
from layerflow._src.keras.layers.attention import MultiHeadAttention
from layerflow._src.keras.layers.dense_attention import AdditiveAttention, Attention
from layerflow._src.keras.layers.einsum_dense import EinsumDense
from layerflow._src.keras.layers.merging_dot import Dot, dot
from layerflow._src.keras.layers.noise import (
    ActivityRegularization,
    AlphaDropout,
    GaussianDropout,
    GaussianNoise,
    SpatialDropout1D,
    SpatialDropout2D,
    SpatialDropout3D,
)
from layerflow._src.keras.layers.normalization_extra import GroupNormalization, UnitNormalization
from layerflow._src.keras.layers.spatial_reshaping import (
    Cropping1D,
    Cropping2D,
    Cropping3D,
    UpSampling1D,
    UpSampling2D,
    UpSampling3D,
    ZeroPadding1D,
    ZeroPadding3D,
)

# isort: split
# --- convolution and 3-D pooling layers (h-tfnn) ---
from layerflow._src.keras.layers.conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from layerflow._src.keras.layers.convolutional_extra import (
    Conv1DTranspose,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    Convolution1D,
    Convolution1DTranspose,
    Convolution2D,
    Convolution2DTranspose,
    Convolution3D,
    Convolution3DTranspose,
    DepthwiseConv1D,
    SeparableConv1D,
    SeparableConv2D,
    SeparableConvolution1D,
    SeparableConvolution2D,
)
from layerflow._src.keras.layers.locally_connected import LocallyConnected1D, LocallyConnected2D
from layerflow._src.keras.layers.pooling_extra import (
    AveragePooling3D,
    AvgPool3D,
    GlobalAveragePooling3D,
    GlobalAvgPool3D,
    GlobalMaxPool3D,
    GlobalMaxPooling3D,
    MaxPool3D,
    MaxPooling3D,
)

# isort: split
# --- Masking, Identity, ThresholdedReLU, SpectralNormalization (h-kengine) ---
from layerflow._src.keras.layers.core_extra import (
    Identity,
    Masking,
    SpectralNormalization,
    ThresholdedReLU,
)

# isort: split
# --- preprocessing layers (h-kprep) ---
from layerflow._src.keras.layers.preprocessing.category_encoding import CategoryEncoding
from layerflow._src.keras.layers.preprocessing.discretization import Discretization
from layerflow._src.keras.layers.preprocessing.hashing import HashedCrossing, Hashing
from layerflow._src.keras.layers.preprocessing.image_augmentation import (
    RandomBrightness,
    RandomContrast,
    RandomCrop,
    RandomFlip,
    RandomHeight,
    RandomRotation,
    RandomTranslation,
    RandomWidth,
    RandomZoom,
)
from layerflow._src.keras.layers.preprocessing.image_preprocessing import (
    CenterCrop,
    Rescaling,
    Resizing,
)
from layerflow._src.keras.layers.preprocessing.integer_lookup import IntegerLookup
from layerflow._src.keras.layers.preprocessing.normalization import Normalization

# isort: split
# --- string preprocessing layers (h-ktext) ---
from layerflow._src.keras.layers.preprocessing.string_lookup import StringLookup
from layerflow._src.keras.layers.preprocessing.text_vectorization import TextVectorization

# isort: split
# --- tf.keras.layers.experimental's dynamic vocabulary layers (h-dynemb) ---
from layerflow._src.keras.layers.dynamic_embedding import DynamicEmbedding, DynamicLookup
