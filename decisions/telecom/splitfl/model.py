"""Split-able image classifiers: a network as a sequence of layers cut at any split point."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array, lax

from decisions.errors import InputError

__all__ = [
    "ARCHS",
    "LayerInfo",
    "LayerSpec",
    "Params",
    "SplitNet",
    "check_split",
    "join_params",
    "layer_table",
    "make_net",
    "split_params",
]

Params = tuple[Any, ...]
Shape = tuple[int, ...]


class LayerInfo(NamedTuple):
    """One layer's costs, per sample.

    Attributes:
        name: the layer's name (unique within the network).
        macs: forward multiply-accumulates (0 for parameter-free ops).
        out_floats: number of values in the activation after this layer (the smashed data when the
            split is just after it).
        params: number of trainable parameters of this layer.
    """

    name: str
    macs: int
    out_floats: int
    params: int


@dataclass(frozen=True)
class LayerSpec:
    """One layer of a sequential network.

    Attributes:
        name: unique name.
        kind: ``"conv"``, ``"dense"``, ``"relu"``, ``"maxpool"``, ``"flatten"`` or ``"gap"``.
        features: output channels / units (``conv``, ``dense``; for a depthwise conv, equal to
            the input channels).
        kernel: square kernel size (``conv``); pool size (``maxpool``).
        stride: stride (``conv``, ``maxpool``), 'SAME' padding for convs, 'VALID' for pools.
        depthwise: a depthwise conv (one filter per input channel).
        relu: apply a ReLU after the map (fused into this layer).
    """

    name: str
    kind: str
    features: int = 0
    kernel: int = 0
    stride: int = 1
    depthwise: bool = False
    relu: bool = False


def _conv(name: str, features: int, kernel: int = 3, stride: int = 1, *, relu: bool = True) -> LayerSpec:
    return LayerSpec(name, "conv", features, kernel, stride, relu=relu)


def _dw(name: str, channels: int, stride: int = 1) -> LayerSpec:
    return LayerSpec(name, "conv", channels, 3, stride, depthwise=True, relu=True)


_CNN: tuple[LayerSpec, ...] = (
    _conv("conv1", 16, relu=False),
    LayerSpec("relu1", "relu"),
    LayerSpec("pool1", "maxpool", kernel=2, stride=2),
    _conv("conv2", 32, relu=False),
    LayerSpec("relu2", "relu"),
    LayerSpec("flatten", "flatten"),
    LayerSpec("fc1", "dense", 64),
    LayerSpec("relu3", "relu"),
    LayerSpec("fc2", "dense", 10),
)

_MOBILENET: tuple[LayerSpec, ...] = (
    _conv("stem", 16, 3, 2),
    _dw("dw1", 16, 1),
    _conv("pw1", 32, 1),
    _dw("dw2", 32, 2),
    _conv("pw2", 64, 1),
    _dw("dw3", 64, 1),
    _conv("pw3", 64, 1),
    _dw("dw4", 64, 2),
    _conv("pw4", 128, 1),
    _dw("dw5", 128, 1),
    _conv("pw5", 128, 1),
    LayerSpec("gap", "gap"),
    LayerSpec("fc", "dense", 10),
)

ARCHS: dict[str, tuple[tuple[LayerSpec, ...], Shape]] = {
    "cnn": (_CNN, (8, 8, 1)),
    "mobilenet": (_MOBILENET, (28, 28, 1)),
}


def _out_shape(spec: LayerSpec, shape: Shape) -> Shape:
    """Per-sample output shape of a layer given its per-sample input shape."""
    if spec.kind == "conv":
        h, w, _ = shape
        return (-(-h // spec.stride), -(-w // spec.stride), spec.features)
    if spec.kind == "maxpool":
        h, w, c = shape
        return ((h - spec.kernel) // spec.stride + 1, (w - spec.kernel) // spec.stride + 1, c)
    if spec.kind == "dense":
        return (*shape[:-1], spec.features)
    if spec.kind == "flatten":
        return (math.prod(shape),)
    if spec.kind == "gap":
        return (shape[-1],)
    return shape


def _weight_shape(spec: LayerSpec, shape: Shape) -> Shape | None:
    """Kernel shape of a layer (HWIO for convs), ``None`` when parameter-free."""
    if spec.kind == "conv":
        cin = shape[-1]
        if spec.depthwise:
            if spec.features != cin:
                raise InputError(
                    "arch", f"depthwise layer {spec.name} needs {cin} features, got {spec.features}"
                )
            return (spec.kernel, spec.kernel, 1, cin)
        return (spec.kernel, spec.kernel, cin, spec.features)
    if spec.kind == "dense":
        if len(shape) != 1:
            raise InputError("arch", f"dense layer {spec.name} needs a flat input, got shape {shape}")
        return (shape[0], spec.features)
    return None


def _layer_info(spec: LayerSpec, shape: Shape) -> LayerInfo:
    out = _out_shape(spec, shape)
    kshape = _weight_shape(spec, shape)
    params = 0 if kshape is None else math.prod(kshape) + spec.features
    macs = 0
    if spec.kind == "conv":
        assert kshape is not None
        macs = out[0] * out[1] * spec.features * kshape[0] * kshape[1] * kshape[2]
    elif spec.kind == "dense":
        macs = shape[0] * spec.features
    return LayerInfo(spec.name, macs, math.prod(out), params)


def xla_conv(x: Array, w: Array, stride: int, groups: int = 1) -> Array:
    """XLA's convolution of NHWC ``x`` with HWIO ``w``, 'SAME' padding (``groups`` > 1: grouped)."""
    return lax.conv_general_dilated(
        x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=groups
    )


def _depthwise_conv(x: Array, w: Array, stride: int) -> Array:
    """A depthwise convolution, 'SAME' padding, as a sum of shifted, channel-scaled copies of ``x``.

    ``w``: ``(k, k, 1, C)`` (HWIO). The same function as ``lax.conv_general_dilated`` with
    ``feature_group_count=C``, which XLA:CPU runs several times slower (``python -m
    decisions.telecom.splitfl.conv_timing``: one ``mobilenet`` forward and backward pass, batch 32,
    2 idle cores, two runs: 96.7 and 77.3 ms with the grouped conv, 13.3 and 7.8 ms this way).
    """
    k = w.shape[0]
    scales = [w[i, j, 0] for i in range(k) for j in range(k)]
    return sum(window * scale for window, scale in zip(_windows(x, k, stride), scales, strict=True))


def _same_padding(x: Array, k: int, stride: int) -> tuple[Array, int, int]:
    """``x`` padded as XLA's 'SAME' pads it for a ``k`` x ``k`` window at ``stride``; the output size."""
    size_h, size_w = x.shape[1], x.shape[2]
    out_h, out_w = -(-size_h // stride), -(-size_w // stride)
    pad_h = max((out_h - 1) * stride + k - size_h, 0)
    pad_w = max((out_w - 1) * stride + k - size_w, 0)
    padded = jnp.pad(x, ((0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2), (0, 0)))
    return padded, out_h, out_w


def _windows(x: Array, k: int, stride: int) -> list[Array]:
    """The ``k * k`` shifted windows of ``x`` ('SAME' padding), row by row: each ``(N, H', W', C)``."""
    padded, out_h, out_w = _same_padding(x, k, stride)
    span_h, span_w = (out_h - 1) * stride + 1, (out_w - 1) * stride + 1
    return [padded[:, i : i + span_h : stride, j : j + span_w : stride, :] for i in range(k) for j in range(k)]


def _patch_conv(x: Array, w: Array, stride: int) -> Array:
    """A convolution, 'SAME' padding, as one matmul of the image patches (im2col) with the kernel.

    ``w``: ``(k, k, C_in, C_out)`` (HWIO). The same function as :func:`xla_conv`; vmapped over
    clients with per-client kernels it stays a batched matmul, where XLA's convolution becomes a
    grouped one that XLA:CPU runs slowly.
    """
    k = w.shape[0]
    patches = jnp.concatenate(_windows(x, k, stride), axis=-1)
    return patches @ w.reshape(-1, w.shape[-1])


def apply_layer(spec: LayerSpec, p: Any, x: Array) -> Array:
    """Apply one layer to a batch ``x`` (leading batch axis)."""
    if spec.kind == "conv":
        if spec.depthwise:
            x = _depthwise_conv(x, p["w"], spec.stride)
        elif spec.kernel == 1 and spec.stride == 1:
            x = x @ p["w"][0, 0]
        else:
            x = _patch_conv(x, p["w"], spec.stride)
        x = x + p["b"]
    elif spec.kind == "dense":
        x = x @ p["w"] + p["b"]
    elif spec.kind == "relu":
        return jax.nn.relu(x)
    elif spec.kind == "maxpool":
        k, s = spec.kernel, spec.stride
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, k, k, 1), (1, s, s, 1), "VALID")
    elif spec.kind == "flatten":
        return x.reshape(x.shape[0], -1)
    elif spec.kind == "gap":
        return jnp.mean(x, axis=(1, 2))
    else:
        raise InputError("arch", f"unknown layer kind {spec.kind!r} in {spec.name}")
    return jax.nn.relu(x) if spec.relu else x


@dataclass(frozen=True)
class SplitNet:
    """A sequential network that can be cut at any layer boundary.

    Hashable, so it can be a static argument of ``jax.jit``.

    Attributes:
        name: architecture name (for messages).
        layers: the layer specs, in order.
        input_shape: per-sample input shape ``(H, W, C)``.
    """

    name: str
    layers: tuple[LayerSpec, ...]
    input_shape: Shape

    @property
    def num_layers(self) -> int:
        """Number of layers ``L`` (split points are ``1 .. L-1``)."""
        return len(self.layers)

    @property
    def splits(self) -> range:
        """All valid split points, ``range(1, L)``."""
        return range(1, self.num_layers)

    def shapes(self) -> list[Shape]:
        """Per-sample activation shapes: the input, then after each layer (``L + 1`` entries)."""
        shapes = [tuple(self.input_shape)]
        for spec in self.layers:
            shapes.append(_out_shape(spec, shapes[-1]))
        return shapes

    def layer_table(self) -> list[LayerInfo]:
        """Per-layer MACs, output size and parameter count (per sample); see ``LayerInfo``."""
        shapes = self.shapes()
        return [_layer_info(spec, shape) for spec, shape in zip(self.layers, shapes[:-1], strict=True)]

    def check_split(self, split: int) -> int:
        """``split`` as an ``int``; ``InputError`` (``split``) unless it is in ``[1, L-1]``."""
        return check_split(self, split)

    def init(self, key: Array) -> Params:
        """Initialise parameters: He-normal kernels (LeCun-normal for the logits layer), zero biases.

        Args:
            key: a PRNG key.

        Returns:
            A tuple with one pytree per layer (``{}`` for parameter-free layers), float32.
        """
        shapes = self.shapes()
        keys = jax.random.split(key, self.num_layers)
        last = self.num_layers - 1
        params: list[Any] = []
        for i, (spec, shape) in enumerate(zip(self.layers, shapes[:-1], strict=True)):
            kshape = _weight_shape(spec, shape)
            if kshape is None:
                params.append({})
                continue
            fan_in = math.prod(kshape[:-1])
            gain = 1.0 if i == last else 2.0
            w = jax.random.normal(keys[i], kshape, jnp.float32) * math.sqrt(gain / fan_in)
            params.append({"w": w, "b": jnp.zeros((spec.features,), jnp.float32)})
        return tuple(params)

    def _prep(self, x: Array) -> Array:
        x = jnp.asarray(x, jnp.float32)
        if x.ndim == len(self.input_shape) and self.input_shape[-1] == 1:
            x = x[..., None]
        return x

    def _run(self, params: Sequence[Any], x: Array, start: int, stop: int) -> Array:
        if len(params) != stop - start:
            raise InputError(
                "params",
                f"expected {stop - start} layer pytrees for layers [{start}, {stop}), got {len(params)}",
            )
        for spec, p in zip(self.layers[start:stop], params, strict=True):
            x = apply_layer(spec, p, x)
        return x

    def apply(self, params: Params, x: Array) -> Array:
        """The full network: logits ``(B, classes)`` for images ``(B, H, W, C)`` (or ``(B, H, W)``)."""
        return self._run(params, self._prep(x), 0, self.num_layers)

    def client_apply(self, client_params: Params, x: Array, split: int) -> Array:
        """Client side: layers ``[0, split)``; returns the smashed activations at the cut.

        Args:
            client_params: ``params[:split]``.
            x: images ``(B, H, W, C)`` (or ``(B, H, W)``).
            split: split point in ``[1, L-1]`` (a Python int, static under ``jit``).
        """
        split = check_split(self, split)
        return self._run(client_params, self._prep(x), 0, split)

    def server_apply(self, server_params: Params, h: Array, split: int) -> Array:
        """Server side: layers ``[split, L)`` on the smashed activations ``h``; returns logits.

        Args:
            server_params: ``params[split:]``.
            h: activations from ``client_apply``.
            split: split point in ``[1, L-1]`` (a Python int, static under ``jit``).
        """
        split = check_split(self, split)
        return self._run(server_params, h, split, self.num_layers)


def check_split(net: SplitNet, split: int) -> int:
    """Validate a split point ``split`` of ``net``; see ``SplitNet.check_split``."""
    n = net.num_layers
    if isinstance(split, bool) or not isinstance(split, int) or not 1 <= split <= n - 1:
        raise InputError(
            "split", f"split point must lie in [1, {n - 1}] for {net.name} ({n} layers), got {split}"
        )
    return int(split)


def make_net(arch: str | SplitNet, input_shape: Sequence[int] | None = None) -> SplitNet:
    """A network by architecture name (``"cnn"`` or ``"mobilenet"``, see ``ARCHS``), or ``arch`` itself.

    ``input_shape`` ``(H, W, C)`` (``(H, W)``: one channel) defaults to the architecture's. Raises
    ``InputError`` (``arch``) for an unknown name, (``input_shape``) for a malformed shape.
    """
    if isinstance(arch, SplitNet):
        if input_shape is None:
            return arch
        name, layers = arch.name, arch.layers
    else:
        if arch not in ARCHS:
            raise InputError("arch", f"unknown architecture {arch!r}; expected one of {sorted(ARCHS)}")
        name = arch
        layers, default = ARCHS[arch]
        input_shape = default if input_shape is None else input_shape
    shape = tuple(int(d) for d in input_shape)
    if len(shape) == 2:
        shape = (*shape, 1)
    if len(shape) != 3 or min(shape) < 1:
        raise InputError("input_shape", f"expected (H, W, C) with positive sizes, got {tuple(input_shape)}")
    net = SplitNet(name, layers, shape)
    net.layer_table()  # validates the shapes through the network
    return net


def layer_table(arch: str | SplitNet, input_shape: Sequence[int] | None = None) -> list[LayerInfo]:
    """Per-layer costs of an architecture, per sample (see ``LayerInfo``).

    Client compute at split ``s`` is ``sum(t.macs for t in table[:s])``, the upload per sample is
    ``table[s - 1].out_floats`` and the client model size ``sum(t.params for t in table[:s])``.

    Args:
        arch: architecture name or ``SplitNet``.
        input_shape: per-sample input shape; defaults to the architecture's.
    """
    return make_net(arch, input_shape).layer_table()


def split_params(params: Params, split: int) -> tuple[Params, Params]:
    """Cut per-layer parameters into ``(client, server) = (params[:split], params[split:])``.

    Args:
        params: the tuple of per-layer pytrees.
        split: split point in ``[1, len(params) - 1]``.

    Raises:
        InputError: (``split``) outside ``[1, L-1]``.
    """
    n = len(params)
    if isinstance(split, bool) or not isinstance(split, int) or not 1 <= split <= n - 1:
        raise InputError(
            "split", f"split point must lie in [1, {n - 1}] for this network ({n} layers), got {split}"
        )
    return tuple(params[:split]), tuple(params[split:])


def join_params(client: Params, server: Params) -> Params:
    """Rejoin a client and a server part into the full per-layer parameter tuple."""
    return tuple(client) + tuple(server)
