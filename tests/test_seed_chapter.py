"""The seed chapter's code blocks ("layers and blocks", "parameter access", "initialization",
"parameter tying", "deferred initialization", "custom layers"), as written, with
`import layerflow as tf`. Random values aside, each test asserts what the chapter prints.

Seed 000 is the D2L chapter; seed 002 is a blog post walking through the same parts.
"""

import re

import numpy as np
import pytest

import layerflow as tf


def relu(x):
    return np.maximum(x, 0)


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()
    yield


# ------------------------------------------------------------------- 000: layers and blocks
def test_000_sequential_block():
    net = tf.keras.models.Sequential(
        [tf.keras.layers.Dense(256, activation=tf.nn.relu), tf.keras.layers.Dense(10)]
    )
    X = tf.random.uniform((2, 20))
    Y = net(X)
    assert Y.shape == (2, 10) and Y.dtype == tf.float32
    assert repr(Y).startswith("<tf.Tensor: shape=(2, 10), dtype=float32, numpy=\narray([[")
    w1, b1, w2, b2 = net.get_weights()
    np.testing.assert_allclose(Y.numpy(), relu(X.numpy() @ w1 + b1) @ w2 + b2, rtol=1e-5)


class MLP(tf.keras.Model):
    # 用模型参数声明层。这里，我们声明两个全连接的层
    def __init__(self):
        # 调用MLP的父类Model的构造函数来执行必要的初始化
        super().__init__()
        # Hidden layer
        self.hidden = tf.keras.layers.Dense(units=256, activation=tf.nn.relu)
        self.out = tf.keras.layers.Dense(units=10)  # Output layer

    def call(self, X):
        return self.out(self.hidden(X))


class MySequential(tf.keras.Model):
    def __init__(self, *args):
        super().__init__()
        self.modules = []
        for block in args:
            # 这里block是tf.keras.layers.Layer子类的一个实例
            self.modules.append(block)

    def call(self, X):
        for module in self.modules:
            X = module(X)
        return X


class FixedHiddenMLP(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.flatten = tf.keras.layers.Flatten()
        # 使用tf.constant函数创建的随机权重参数在训练期间不会更新（即为常量参数）
        self.rand_weight = tf.constant(tf.random.uniform((20, 20)))
        self.dense = tf.keras.layers.Dense(20, activation=tf.nn.relu)

    def call(self, inputs):
        X = self.flatten(inputs)
        # 使用创建的常量参数以及relu和matmul函数
        X = tf.nn.relu(tf.matmul(X, self.rand_weight) + 1)
        # 复用全连接层。这相当于两个全连接层共享参数
        X = self.dense(X)
        # 控制流
        while tf.reduce_sum(tf.math.abs(X)) > 1:
            X /= 2
        return tf.reduce_sum(X)


class NestMLP(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.net = tf.keras.Sequential()
        self.net.add(tf.keras.layers.Dense(64, activation=tf.nn.relu))
        self.net.add(tf.keras.layers.Dense(32, activation=tf.nn.relu))
        self.dense = tf.keras.layers.Dense(16, activation=tf.nn.relu)

    def call(self, inputs):
        return self.dense(self.net(inputs))


def test_000_custom_block_mlp():
    X = tf.random.uniform((2, 20))
    net = MLP()
    Y = net(X)
    assert Y.shape == (2, 10)
    assert [w.shape for w in net.get_weights()] == [(20, 256), (256,), (256, 10), (10,)]
    assert list(net._trackable_children()) == ["hidden", "out"]
    w1, b1, w2, b2 = net.get_weights()
    np.testing.assert_allclose(Y.numpy(), relu(X.numpy() @ w1 + b1) @ w2 + b2, rtol=1e-5)


def test_000_my_sequential_tracks_a_list_appended_after_assignment():
    X = tf.random.uniform((2, 20))
    net = MySequential(
        tf.keras.layers.Dense(units=256, activation=tf.nn.relu), tf.keras.layers.Dense(10)
    )
    assert net(X).shape == (2, 10)
    assert len(net.layers) == 2 and len(net.weights) == 4
    assert len(net.trainable_variables) == 4


def test_000_fixed_hidden_mlp_runs_python_control_flow_on_values():
    X = tf.random.uniform((2, 20))
    net = FixedHiddenMLP()
    out = net(X)
    assert out.shape == () and out.dtype == tf.float32
    # The while loop halves until the absolute sum is at most 1; relu makes every entry >= 0.
    assert 0.0 <= float(out) <= 1.0
    # The constant is not a parameter: only the Dense layer's kernel and bias are.
    assert [tuple(v.shape) for v in net.trainable_variables] == [(20, 20), (20,)]


def test_000_chimera_mixes_sequential_and_subclassed_models():
    X = tf.random.uniform((2, 20))
    chimera = tf.keras.Sequential()
    chimera.add(NestMLP())
    chimera.add(tf.keras.layers.Dense(20))
    chimera.add(FixedHiddenMLP())
    out = chimera(X)
    assert out.shape == () and out.dtype == tf.float32
    assert abs(float(out)) <= 1.0
    assert len(chimera.layers) == 3
    shapes = [w.shape for w in chimera.get_weights()]
    assert shapes == [(20, 64), (64,), (64, 32), (32,), (32, 16), (16,), (16, 20), (20,),
                      (20, 20), (20,)]  # fmt: skip


# ------------------------------------------------------------------- 000: parameter access
def test_000_parameter_access():
    net = tf.keras.models.Sequential(
        [
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(4, activation=tf.nn.relu),
            tf.keras.layers.Dense(1),
        ]  # fmt: skip
    )
    X = tf.random.uniform((2, 4))
    assert net(X).shape == (2, 1)
    weights = net.layers[2].weights
    name = net.layers[2].name
    assert re.fullmatch(r"dense(_\d+)?", name)
    assert [w.name for w in weights] == [f"{name}/kernel:0", f"{name}/bias:0"]
    text = str(weights)
    assert text.startswith(f"[<tf.Variable '{name}/kernel:0' shape=(4, 1) dtype=float32, numpy=")
    assert text.endswith(
        f"<tf.Variable '{name}/bias:0' shape=(1,) dtype=float32, numpy=array([0.], dtype=float32)>]"
    )
    assert isinstance(net.layers[2].weights[1], tf.Variable)
    assert str(net.layers[2].weights[1]) == (
        f"<tf.Variable '{name}/bias:0' shape=(1,) dtype=float32, numpy=array([0.], dtype=float32)>"
    )
    assert str(tf.convert_to_tensor(net.layers[2].weights[1])) == (
        "tf.Tensor([0.], shape=(1,), dtype=float32)"
    )
    first = net.layers[1].name
    assert [w.name for w in net.layers[1].weights] == [f"{first}/kernel:0", f"{first}/bias:0"]
    got = net.get_weights()
    assert [a.shape for a in got] == [(4, 4), (4,), (4, 1), (1,)]
    assert all(isinstance(a, np.ndarray) for a in got)
    np.testing.assert_array_equal(net.get_weights()[1], np.zeros(4, np.float32))
    # get_weights returns copies: changing them changes nothing in the model.
    got[0][...] = 7.0
    assert not np.any(net.get_weights()[0] == 7.0)


def block1(name):
    return tf.keras.Sequential([
        # X是二维的，也就是说没有batch的维度，因此其实没有起作用，经过flatten维度不变
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(4, activation=tf.nn.relu, name=name),
    ])  # fmt: skip


def block2():
    net = tf.keras.Sequential()
    for i in range(4):
        # 在这里嵌套
        net.add(block1(name=f"block-{i}"))
    return net


def _summary_lines(model):
    lines = []
    assert model.summary(print_fn=lines.append) is None
    return lines


def test_000_nested_blocks_summary_and_names(capsys):
    X = tf.random.uniform((2, 4))
    rgnet = tf.keras.Sequential()
    rgnet.add(block2())
    rgnet.add(tf.keras.layers.Dense(1))
    assert rgnet(X).shape == (2, 1)
    print(rgnet.summary())  # 4*(4+1) + 4*(4+1) + 4*(4+1) + 4*(4+1) + (4+1)
    printed = capsys.readouterr().out.splitlines()
    inner, last = rgnet.layers
    expected = [
        f'Model: "{rgnet.name}"',
        "_" * 65,
        "Layer (type)                 Output Shape              Param #   ",
        "=" * 65,
        f"{inner.name + ' (Sequential)':<29}{'(2, 4)':<26}80        ",
        "_" * 65,
        f"{last.name + ' (Dense)':<29}{'(2, 1)':<26}5         ",
        "=" * 65,
        "Total params: 85",
        "Trainable params: 85",
        "Non-trainable params: 0",
        "_" * 65,
        "None",
    ]
    assert printed == expected
    assert re.fullmatch(r"sequential(_\d+)?", inner.name) and re.fullmatch(
        r"dense(_\d+)?", last.name
    )
    assert repr(rgnet.layers[0].layers[1].layers[1].weights[1]) == (
        "<tf.Variable 'block-1/bias:0' shape=(4,) dtype=float32, "
        "numpy=array([0., 0., 0., 0.], dtype=float32)>"
    )
    assert rgnet.count_params() == 85


# ------------------------------------------------------------------- 000: initialization
def test_000_builtin_initializers():
    X = tf.random.uniform((2, 4))
    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(
            4,
            activation=tf.nn.relu,
            kernel_initializer=tf.random_normal_initializer(mean=0, stddev=0.01),
            bias_initializer=tf.zeros_initializer(),
        ),
        tf.keras.layers.Dense(1),
    ])  # fmt: skip
    assert net(X).shape == (2, 1)
    kernel, bias = net.weights[0], net.weights[1]
    name = net.layers[1].name
    assert (kernel.name, bias.name) == (f"{name}/kernel:0", f"{name}/bias:0")
    assert np.all(np.abs(kernel.numpy()) < 0.06)  # 6 sigma of N(0, 0.01)
    assert np.any(kernel.numpy() != 0)
    np.testing.assert_array_equal(bias.numpy(), np.zeros(4, np.float32))

    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(
            4,
            activation=tf.nn.relu,
            kernel_initializer=tf.keras.initializers.Constant(1),
            bias_initializer=tf.zeros_initializer(),
        ),
        tf.keras.layers.Dense(1),
    ])  # fmt: skip
    Y = net(X)
    np.testing.assert_array_equal(net.weights[0].numpy(), np.ones((4, 4), np.float32))
    np.testing.assert_array_equal(net.weights[1].numpy(), np.zeros(4, np.float32))
    w2, b2 = net.layers[2].get_weights()
    np.testing.assert_allclose(Y.numpy(), relu(X.numpy() @ np.ones((4, 4))) @ w2 + b2, rtol=1e-5)

    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(4, activation=tf.nn.relu,
                              kernel_initializer=tf.keras.initializers.GlorotUniform()),
        tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.Constant(1)),
    ])  # fmt: skip
    net(X)
    limit = np.sqrt(6 / (4 + 4))
    assert np.all(np.abs(net.layers[1].weights[0].numpy()) <= limit)
    assert repr(net.layers[2].weights[0]) == (
        f"<tf.Variable '{net.layers[2].name}/kernel:0' shape=(4, 1) dtype=float32, numpy=\n"
        "array([[1.],\n       [1.],\n       [1.],\n       [1.]], dtype=float32)>"
    )


class MyInit(tf.keras.initializers.Initializer):
    def __call__(self, shape, dtype=None):
        data = tf.random.uniform(shape, -10, 10, dtype=dtype)
        factor = tf.abs(data) >= 5
        factor = tf.cast(factor, tf.float32)
        return data * factor


def test_000_custom_initializer_and_direct_assignment():
    X = tf.random.uniform((2, 4))
    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(4, activation=tf.nn.relu, kernel_initializer=MyInit()),
        tf.keras.layers.Dense(1),
    ])  # fmt: skip
    net(X)
    w = net.layers[1].weights[0].numpy()
    assert w.shape == (4, 4)
    assert np.all((w == 0) | ((np.abs(w) >= 5) & (np.abs(w) <= 10)))
    # 注意，我们始终可以直接设置参数
    net.layers[1].weights[0][:].assign(net.layers[1].weights[0] + 1)
    net.layers[1].weights[0][0, 0].assign(42)
    expected = w + 1
    expected[0, 0] = 42
    np.testing.assert_array_equal(net.layers[1].weights[0].numpy(), expected)
    assert repr(net.layers[1].weights[0]).startswith(
        f"<tf.Variable '{net.layers[1].name}/kernel:0' shape=(4, 4) dtype=float32, numpy=\n"
        "array([[42. "
    )


# ------------------------------------------------------------------- 000: parameter tying
def test_000_parameter_tying():
    X = tf.random.uniform((2, 4))
    shared = tf.keras.layers.Dense(4, activation=tf.nn.relu)
    net = tf.keras.models.Sequential(
        [tf.keras.layers.Flatten(), shared, shared, tf.keras.layers.Dense(1)]
    )
    Y = net(X)
    assert Y.shape == (2, 1)
    print(len(net.layers) == 3)  # 只剩下flatten，shared，dense三个层
    assert len(net.layers) == 3
    assert len(net.weights) == 4  # the shared kernel and bias once
    w, b, w2, b2 = net.get_weights()
    x = X.numpy()
    np.testing.assert_allclose(
        Y.numpy(), relu(relu(x @ w + b) @ w + b) @ w2 + b2, rtol=1e-5, atol=1e-6
    )
    # Gradients through both uses are summed: compare with central differences in float64.
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(net(X))
    grad = tape.gradient(loss, shared.kernel).numpy()

    def f(k):
        return np.sum(relu(relu(x @ k + b) @ k + b) @ w2 + b2)

    num = np.zeros_like(w, dtype=np.float64)
    k64 = w.astype(np.float64)
    for i in np.ndindex(*w.shape):
        d = np.zeros_like(k64)
        d[i] = 1e-4
        num[i] = (f(k64 + d) - f(k64 - d)) / 2e-4
    np.testing.assert_allclose(grad, num, rtol=1e-3, atol=1e-4)


# ------------------------------------------------------------------- 000: deferred initialization
def test_000_deferred_initialization():
    net = tf.keras.models.Sequential(
        [tf.keras.layers.Dense(256, activation=tf.nn.relu), tf.keras.layers.Dense(10)]
    )
    assert [net.layers[i].get_weights() for i in range(len(net.layers))] == [[], []]
    assert net.weights == [] and not net.built
    X = tf.random.uniform((2, 20))
    assert net(X).shape == (2, 10)
    assert [w.shape for w in net.get_weights()] == [(20, 256), (256,), (256, 10), (10,)]


# ------------------------------------------------------------------- 000: custom layers
class CenteredLayer(tf.keras.Model):
    def __init__(self):
        super().__init__()

    def call(self, inputs):
        return inputs - tf.reduce_mean(inputs)


class MyDense(tf.keras.Model):
    def __init__(self, units):
        super().__init__()
        self.units = units

    def build(self, X_shape):
        self.weight = self.add_weight(
            name="weight", shape=[X_shape[-1], self.units],
            initializer=tf.random_normal_initializer(),
        )  # fmt: skip
        self.bias = self.add_weight(
            name="bias", shape=[self.units], initializer=tf.zeros_initializer()
        )

    def call(self, X):
        linear = tf.matmul(X, self.weight) + self.bias
        return tf.nn.relu(linear)


def test_000_layer_without_parameters():
    layer = CenteredLayer()
    out = layer(tf.constant([1, 2, 3, 4, 5]))
    assert out.dtype == tf.int32 and out.shape == (5,)
    np.testing.assert_array_equal(out.numpy(), [-2, -1, 0, 1, 2])
    net = tf.keras.Sequential([tf.keras.layers.Dense(256), CenteredLayer()])
    Y = net(tf.random.uniform((4, 8)))
    assert tf.reduce_mean(Y).shape == ()
    assert abs(float(tf.reduce_mean(Y))) < 1e-6


def test_000_layer_with_parameters():
    dense = MyDense(3)
    dense(tf.random.uniform((2, 5)))
    weight, bias = dense.get_weights()
    assert weight.shape == (5, 3) and weight.dtype == np.float32
    assert np.all(np.abs(weight) < 0.3)  # RandomNormal(stddev=0.05), 6 sigma
    np.testing.assert_array_equal(bias, np.zeros(3, np.float32))
    assert [w.name for w in dense.weights] == [f"{dense.name}/weight:0", f"{dense.name}/bias:0"]
    X = tf.random.uniform((2, 5))
    out = dense(X)
    np.testing.assert_allclose(out.numpy(), relu(X.numpy() @ weight + bias), rtol=1e-5)
    net = tf.keras.models.Sequential([MyDense(8), MyDense(1)])
    assert net(tf.random.uniform((2, 64))).shape == (2, 1)
    assert [w.shape for w in net.get_weights()] == [(64, 8), (8,), (8, 1), (1,)]


# ------------------------------------------------------------------- 002: the same parts, retold
class Dense_3(tf.keras.Model):  # noqa: N801 - the seed's name
    def __init__(self):
        # 调用父类Model的构造函数来执行必要的初始化。
        super().__init__()
        # 用模型参数声明层。这里，我们声明三个个全连接的层
        hidden_1 = tf.keras.layers.Dense(units=256, activation=tf.nn.relu)  # noqa: F841
        hidden_2 = tf.keras.layers.Dense(units=128, activation=tf.nn.relu)  # noqa: F841
        hidden_3 = tf.keras.layers.Dense(units=32, activation=tf.nn.relu)  # noqa: F841

    # 定义块的前向传播，即如何根据输入X返回块输出
    def call(self, X):
        return self.hidden_3(self.hidden_2(self.hidden_1(X)))


class Dense3Fixed(tf.keras.Model):
    """Seed 002's Dense_3 as its text describes it (the layers stored on self)."""

    def __init__(self):
        super().__init__()
        self.hidden_1 = tf.keras.layers.Dense(units=256, activation=tf.nn.relu)
        self.hidden_2 = tf.keras.layers.Dense(units=128, activation=tf.nn.relu)
        self.hidden_3 = tf.keras.layers.Dense(units=32, activation=tf.nn.relu)

    def call(self, X):
        return self.hidden_3(self.hidden_2(self.hidden_1(X)))


def test_002_blocks_as_written_and_as_meant():
    X = tf.random.uniform((2, 20))
    net = tf.keras.models.Sequential([
        tf.keras.layers.Dense(256, activation=tf.nn.relu),
        tf.keras.layers.Dense(10),
    ])  # fmt: skip
    assert net(X).shape == (2, 10)
    # As written, Dense_3 keeps its layers in local variables, so call() cannot find them:
    # TensorFlow raises AttributeError here too.
    with pytest.raises(AttributeError, match="hidden_3"):
        Dense_3()(X)
    net = Dense3Fixed()
    out = net(X)
    assert out.shape == (2, 32) and np.all(out.numpy() >= 0)
    net = MySequential(
        tf.keras.layers.Dense(units=256, activation=tf.nn.relu), tf.keras.layers.Dense(10)
    )
    assert net(X).shape == (2, 10)
    net = tf.keras.Sequential()
    net.add(Dense3Fixed())
    net.add(
        MySequential(
            tf.keras.layers.Dense(units=16, activation=tf.nn.relu), tf.keras.layers.Dense(2)
        )
    )
    assert net(X).shape == (2, 2)
    assert len(net.layers) == 2 and len(net.weights) == 10


def test_002_parameter_access_and_nested_names():
    net = tf.keras.models.Sequential([
        tf.keras.layers.Dense(4, activation=tf.nn.relu),
        tf.keras.layers.Dense(2, activation=tf.nn.relu),
        tf.keras.layers.Dense(1),
    ])  # fmt: skip
    X = tf.random.uniform((2, 4))
    assert net(X).shape == (2, 1)
    assert [tuple(w.shape) for w in net.layers[-1].weights] == [(2, 1), (1,)]
    assert net.layers[-1].weights[0] is net.weights[4]
    assert [a.shape for a in net.get_weights()] == [(4, 4), (4,), (4, 2), (2,), (2, 1), (1,)]
    np.testing.assert_array_equal(net.get_weights()[0], net.layers[0].kernel.numpy())

    def block1(name):
        return tf.keras.Sequential(
            [tf.keras.layers.Flatten(), tf.keras.layers.Dense(4, activation=tf.nn.relu)],
            name=name,
        )

    def block2():
        net = tf.keras.Sequential()
        for i in range(4):
            net.add(block1(name=f"block-{i}"))
        return net

    rgnet = tf.keras.Sequential()
    rgnet.add(block2())
    rgnet.add(tf.keras.layers.Dense(1))
    assert rgnet(X).shape == (2, 1)
    lines = _summary_lines(rgnet)
    assert lines[4].split()[-2:] == ["4)", "80"] and lines[6].split()[-2:] == ["1)", "5"]
    assert lines[8:11] == ["Total params: 85", "Trainable params: 85", "Non-trainable params: 0"]
    assert [layer.name for layer in rgnet.layers[0].layers] == [f"block-{i}" for i in range(4)]
    inner_dense = rgnet.layers[0].layers[1].layers[1]
    assert rgnet.layers[0].layers[1].layers[1].weights[1].name == f"{inner_dense.name}/bias:0"


def test_002_initializers():
    X = tf.random.uniform((2, 4))
    net = tf.keras.models.Sequential([
        tf.keras.layers.Dense(8, activation=tf.nn.relu,
                              kernel_initializer=tf.keras.initializers.GlorotUniform(),
                              bias_initializer=tf.zeros_initializer()),
        tf.keras.layers.Dense(4, activation=tf.nn.relu,
                              kernel_initializer=tf.random_normal_initializer(mean=1, stddev=0.01),
                              bias_initializer=tf.zeros_initializer()),
        tf.keras.layers.Dense(2, activation=tf.nn.relu,
                              kernel_initializer=tf.keras.initializers.Constant(1),
                              bias_initializer=tf.zeros_initializer()),
        tf.keras.layers.Dense(1),
    ])  # fmt: skip
    assert net(X).shape == (2, 1)
    assert np.all(np.abs(net.layers[0].weights[0].numpy()) <= np.sqrt(6 / 12))
    w1 = net.layers[1].weights[0].numpy()
    assert w1.shape == (8, 4) and np.all(np.abs(w1 - 1) < 0.06)
    np.testing.assert_array_equal(net.layers[2].weights[0].numpy(), np.ones((4, 2), np.float32))


def test_002_deferred_initialization():
    net = tf.keras.models.Sequential([
        tf.keras.layers.Dense(4, activation=tf.nn.relu),
        tf.keras.layers.Dense(2),
    ])  # fmt: skip
    assert (net.layers[0].get_weights(), net.layers[1].get_weights()) == ([], [])
    X = tf.random.uniform((2, 5))
    net(X)
    first, second = net.layers[0].get_weights(), net.layers[1].get_weights()
    assert [a.shape for a in first] == [(5, 4), (4,)]
    assert [a.shape for a in second] == [(4, 2), (2,)]


def test_002_custom_initializer_after_flatten():
    X = tf.random.uniform((2, 5))
    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(4, activation=tf.nn.relu, kernel_initializer=MyInit()),
        tf.keras.layers.Dense(1),
    ])  # fmt: skip
    net(X)
    w = net.layers[1].weights[0].numpy()
    assert w.shape == (5, 4)
    assert np.all((w == 0) | ((np.abs(w) >= 5) & (np.abs(w) <= 10)))
