"""Split model and SplitFed (SFLV1) training: composition, costs, equivalence, FedAvg, learning."""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from decisions.errors import InputError
from decisions.telecom.splitfl.model import (
    LayerSpec,
    Params,
    SplitNet,
    apply_layer,
    join_params,
    layer_table,
    make_net,
    split_params,
    xla_conv,
)
from decisions.telecom.splitfl.split import (
    ClientData,
    equivalence_error,
    equivalence_errors,
    evaluate,
    full_step,
    make_round,
    pad_clients,
    split_step,
)

SIZES = (20, 50, 90)


def _images(arch: str, n: int, seed: int = 0) -> jax.Array:
    net = make_net(arch)
    return jax.random.normal(jax.random.key(seed), (n, *net.input_shape))


def _ours_and_xla(
    x: jax.Array, w_dw: jax.Array, w_pw: jax.Array, w: jax.Array, stride: int
) -> list[tuple[jax.Array, jax.Array]]:
    """The depthwise, pointwise and regular conv layers (no bias, no ReLU) beside XLA's convolutions."""
    channels, features = x.shape[-1], w.shape[-1]
    dw = LayerSpec("dw", "conv", channels, w_dw.shape[0], stride, depthwise=True, relu=False)
    pw = LayerSpec("pw", "conv", features, 1, 1, relu=False)
    conv = LayerSpec("conv", "conv", features, w.shape[0], stride, relu=False)
    return [
        (apply_layer(dw, {"w": w_dw, "b": jnp.zeros(channels)}, x),
         xla_conv(x, w_dw, stride, groups=channels)),
        (apply_layer(pw, {"w": w_pw, "b": jnp.zeros(features)}, x), xla_conv(x, w_pw, 1)),
        (apply_layer(conv, {"w": w, "b": jnp.zeros(features)}, x), xla_conv(x, w, stride)),
    ]


@pytest.mark.parametrize(("size", "stride", "kernel"), [(14, 1, 3), (7, 2, 3), (28, 2, 3), (9, 2, 5)])
def test_conv_layers_equal_xla_convolutions(size: int, stride: int, kernel: int) -> None:
    """The shifted-sum depthwise conv, the patch-matmul conv and the matmul pointwise conv are XLA's
    grouped, regular and 1x1 convs (all three in one compiled program)."""
    channels = 8
    x = jax.random.normal(jax.random.key(0), (3, size, size, channels))
    w_dw = jax.random.normal(jax.random.key(1), (kernel, kernel, 1, channels))
    w_pw = jax.random.normal(jax.random.key(2), (1, 1, channels, 16))
    w = jax.random.normal(jax.random.key(3), (kernel, kernel, channels, 16))
    pairs = jax.jit(_ours_and_xla, static_argnums=4)(x, w_dw, w_pw, w, stride)
    (dw, xla_dw), (pw, xla_pw), (conv, xla) = pairs
    out = -(-size // stride)  # 'SAME' padding
    assert dw.shape == (3, out, out, channels) and conv.shape == (3, out, out, 16)
    assert pw.shape == (3, size, size, 16)
    np.testing.assert_allclose(dw, xla_dw, atol=1e-5)
    np.testing.assert_allclose(pw, xla_pw, atol=1e-5)
    np.testing.assert_allclose(conv, xla, atol=1e-4)


class SplitRun(NamedTuple):
    """A network's forward pass and one unsplit SGD step beside the split ones, from the same params and
    batch."""

    net: SplitNet
    params: Params
    logits: jax.Array  # the full network's
    parts: list[tuple[jax.Array, jax.Array]]  # per split: client activations, server logits on them
    full: Params  # after one unsplit step
    stepped: list[Params]  # per split: after one split step


def _split_and_unsplit(
    net: SplitNet, params: Params, x: jax.Array, y: jax.Array
) -> tuple[jax.Array, list[tuple[jax.Array, jax.Array]], Params, list[Params]]:
    opt = optax.sgd(0.1)
    parts, stepped = [], []
    for s in net.splits:
        client, server = split_params(params, s)
        h = net.client_apply(client, x, s)
        parts.append((h, net.server_apply(server, h, s)))
        cp, sp, *_ = split_step(net, s, opt, client, server, opt.init(client), opt.init(server), x, y)
        stepped.append(join_params(cp, sp))
    full, _, _ = full_step(net, opt, params, opt.init(params), x, y)
    return net.apply(params, x), parts, full, stepped


@pytest.fixture(scope="module", params=["cnn", "mobilenet"])
def split_run(request: pytest.FixtureRequest) -> SplitRun:
    """Every split point of the network, forward and one training step, in one compiled program."""
    net = make_net(request.param)
    params = net.init(jax.random.key(5))
    x = _images(request.param, 4, seed=3)
    y = jax.random.randint(jax.random.key(4), (4,), 0, 10)
    return SplitRun(net, params, *jax.jit(_split_and_unsplit, static_argnums=0)(net, params, x, y))


def test_split_join_and_composition_every_split(split_run: SplitRun) -> None:
    net, params = split_run.net, split_run.params
    assert split_run.logits.shape == (4, 10) and len(split_run.parts) == len(net.splits)
    table = net.layer_table()
    for s, (h, logits) in zip(net.splits, split_run.parts, strict=True):
        client, server = split_params(params, s)
        assert len(client) == s and len(server) == net.num_layers - s
        assert join_params(client, server) == params
        assert h.shape[0] == 4 and math.prod(h.shape[1:]) == table[s - 1].out_floats
        np.testing.assert_allclose(logits, split_run.logits, rtol=0, atol=1e-6)


def test_layer_table_hand_counts() -> None:
    cnn = layer_table("cnn")
    assert [t.name for t in cnn] == [
        "conv1",
        "relu1",
        "pool1",
        "conv2",
        "relu2",
        "flatten",
        "fc1",
        "relu3",
        "fc2",
    ]
    assert cnn[0] == ("conv1", 8 * 8 * 16 * 9, 8 * 8 * 16, 9 * 16 + 16)
    assert cnn[1] == ("relu1", 0, 1024, 0)
    assert cnn[2] == ("pool1", 0, 4 * 4 * 16, 0)
    assert cnn[3] == ("conv2", 4 * 4 * 32 * 9 * 16, 4 * 4 * 32, 9 * 16 * 32 + 32)
    assert cnn[6] == ("fc1", 512 * 64, 64, 512 * 64 + 64)
    assert cnn[8] == ("fc2", 64 * 10, 10, 650)
    mob = layer_table("mobilenet")
    assert len(mob) == 13
    assert mob[0] == ("stem", 14 * 14 * 16 * 9, 14 * 14 * 16, 9 * 16 + 16)  # 3x3 stride 2, 'same'
    assert mob[1] == ("dw1", 14 * 14 * 16 * 9, 14 * 14 * 16, 16 * 9 + 16)  # depthwise
    assert mob[2] == ("pw1", 14 * 14 * 32 * 16, 14 * 14 * 32, 16 * 32 + 32)  # pointwise
    assert mob[7].out_floats == 4 * 4 * 64  # 7x7 stride 2 'same' -> 4x4
    assert mob[11] == ("gap", 0, 128, 0)
    # parameter counts add up to the initialised parameters; a different input shape rescales fc1
    for arch in ("cnn", "mobilenet"):
        params = make_net(arch).init(jax.random.key(0))
        n = sum(int(leaf.size) for leaf in jax.tree_util.tree_leaves(params))
        assert n == sum(t.params for t in layer_table(arch))
    assert layer_table("cnn", (16, 16))[6].params == 8 * 8 * 32 * 64 + 64


def test_bad_split_raises_input_error() -> None:
    net = make_net("cnn")
    params = net.init(jax.random.key(0))
    x = _images("cnn", 2)
    for s in (0, net.num_layers, -1):
        with pytest.raises(InputError) as info:
            net.client_apply(params[:1], x, s)
        assert info.value.field == "split"
        assert (
            "[1, 8]" in str(info.value)
            and "cnn (9 layers)" in str(info.value)
            and "\n" not in str(info.value)
        )
        with pytest.raises(InputError, match="split"):
            split_params(params, s)
        with pytest.raises(InputError, match="split"):
            make_round(net, s, optax.sgd(0.1), 1, 4)
    with pytest.raises(InputError, match="arch"):
        make_net("vgg")


def _max_abs_diff(a: Params, b: Params) -> float:
    pairs = zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    return max(float(np.max(np.abs(np.asarray(u) - np.asarray(v)))) for u, v in pairs)


def test_split_step_equals_full_step(split_run: SplitRun) -> None:
    """At every split, a split step (client forward, server gradient, cut gradient pulled back through the
    client) updates the parameters exactly as an unsplit step does."""
    net = split_run.net
    assert _max_abs_diff(split_run.full, split_run.params) > 1e-3  # the step really moved the parameters
    assert len(split_run.stepped) == len(net.splits)
    for s, after in zip(net.splits, split_run.stepped, strict=True):
        assert _max_abs_diff(after, split_run.full) <= 1e-5, s


def test_equivalence_error_runs_every_split_and_reports_the_largest() -> None:
    """``equivalence_errors`` (the bench's figure, eager) has one entry per split point, each within 1e-5 on a
    small conv net; ``equivalence_error`` is their maximum."""
    layers = (LayerSpec("conv", "conv", 4, 3, 2, relu=True), LayerSpec("flatten", "flatten"),
              LayerSpec("fc", "dense", 10))  # fmt: skip
    net = SplitNet("tiny", layers, (6, 6, 1))
    x = jax.random.normal(jax.random.key(3), (4, 6, 6, 1))
    y = jax.random.randint(jax.random.key(4), (4,), 0, 10)
    errors = equivalence_errors(net, jax.random.key(5), (x, y))
    assert list(errors) == list(net.splits) == [1, 2]
    assert all(0.0 <= e <= 1e-5 for e in errors.values())
    assert equivalence_error(net, jax.random.key(5), (x, y)) == max(errors.values())


def _separable(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """10 fixed 8x8 prototypes plus noise: an easy problem."""
    protos = np.random.default_rng(123).normal(size=(10, 8, 8, 1)).astype(np.float32)
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    return protos[y] + 0.5 * rng.normal(size=(n, 8, 8, 1)).astype(np.float32), y


@pytest.fixture(scope="module")
def cnn_round():  # type: ignore[no-untyped-def]
    net = make_net("cnn")
    return net, make_round(net, 3, optax.sgd(0.05), local_steps=3, batch_size=8)


def test_fedavg_identical_clients_equal_one_client(cnn_round) -> None:  # type: ignore[no-untyped-def]
    net, round_fn = cnn_round
    x, y = _separable(SIZES[-1], seed=1)
    three = pad_clients([(x, y)] * 3)
    params = net.init(jax.random.key(0))
    key = jax.random.key(7)
    keys3 = jnp.stack([key, key, key])
    p3, stats3 = round_fn(params, *three, keys3)
    one = ClientData(three.x[:1], three.y[:1], three.counts[:1])
    p1, stats1 = round_fn(params, *one, keys3[:1])
    for a, b in zip(jax.tree_util.tree_leaves(p3), jax.tree_util.tree_leaves(p1), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    np.testing.assert_allclose(stats3.loss, stats1.loss, rtol=1e-6)
    # the round actually trained
    assert float(jnp.max(jnp.abs(p1[0]["w"] - params[0]["w"]))) > 0


def test_fedavg_is_sample_weighted_mean(cnn_round) -> None:  # type: ignore[no-untyped-def]
    net, round_fn = cnn_round
    data = pad_clients([_separable(n, seed=10 + i) for i, n in enumerate(SIZES)])
    params = net.init(jax.random.key(0))
    keys = jax.random.split(jax.random.key(8), 3)
    avg, stats = round_fn(params, *data, keys)
    singles = [
        round_fn(params, data.x[i : i + 1], data.y[i : i + 1], data.counts[i : i + 1], keys[i : i + 1])
        for i in range(3)
    ]
    n = np.array(SIZES, np.float64)
    for layer in (0, 3, 8):  # client conv1, client conv2 (split 3 -> server side), server fc2
        for name in ("w", "b"):
            by_hand = (
                sum(n[i] * np.asarray(singles[i][0][layer][name], np.float64) for i in range(3)) / n.sum()
            )
            np.testing.assert_allclose(np.asarray(avg[layer][name]), by_hand, rtol=0, atol=1e-5)
    # the clients really differ, so this is not the trivial case
    assert float(jnp.max(jnp.abs(singles[0][0][8]["w"] - singles[2][0][8]["w"]))) > 1e-4
    losses = np.array([float(s[1].loss) for s in singles])
    np.testing.assert_allclose(float(stats.loss), (n * losses).sum() / n.sum(), rtol=1e-5)


def test_rounds_learn_an_easy_problem(cnn_round) -> None:  # type: ignore[no-untyped-def]
    net, round_fn = cnn_round
    data = pad_clients([_separable(n, seed=20 + i) for i, n in enumerate(SIZES)])
    x_test, y_test = _separable(300, seed=99)
    params = net.init(jax.random.key(1))
    loss0, acc0 = evaluate(net, params, x_test, y_test, batch_size=128)
    key = jax.random.key(2)
    for _ in range(8):
        key, sub = jax.random.split(key)
        params, _ = round_fn(params, *data, jax.random.split(sub, 3))
    loss1, acc1 = evaluate(net, params, x_test, y_test, batch_size=128)
    assert loss1 < 0.5 * loss0
    assert acc0 < 0.3 and acc1 > 0.8


def test_evaluate_chunking_and_pad_validation() -> None:
    net = make_net("cnn")
    params = net.init(jax.random.key(0))
    x, y = _separable(50, seed=5)
    a = evaluate(net, params, x, y, batch_size=16)  # 3 full chunks + a padded one
    b = evaluate(net, params, x, y, batch_size=64)
    np.testing.assert_allclose(a, b, rtol=1e-5)
    with pytest.raises(InputError, match="datasets"):
        pad_clients([(x, y), (x[:0], y[:0])])


def test_sequential_clients_match_vmapped(cnn_round) -> None:  # type: ignore[no-untyped-def]
    net, round_fn = cnn_round
    seq = make_round(net, 3, optax.sgd(0.05), local_steps=3, batch_size=8, vmap_clients=False)
    data = pad_clients([_separable(n, seed=30 + i) for i, n in enumerate(SIZES)])
    params = net.init(jax.random.key(3))
    keys = jax.random.split(jax.random.key(4), 3)
    (a, sa), (b, sb) = round_fn(params, *data, keys), seq(params, *data, keys)
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(u, v, rtol=0, atol=1e-5)
    np.testing.assert_allclose(sa.client_loss, sb.client_loss, rtol=1e-5)


def test_the_cost_model_reads_the_network_s_layer_table_with_the_same_split_convention() -> None:
    from decisions.telecom.splitfl.costs import ClientSpecs, split_costs
    from decisions.telecom.splitfl.model import layer_table, make_net

    net = make_net("cnn")
    table = layer_table("cnn")
    one = ClientSpecs(1e9, 10.0, 20.0, 0.0, 512.0, 3.0, 1.0, 1.0)
    splits = list(net.splits)
    costs = split_costs(table, splits, batch=32, local_steps=1, clients=one, server_macs_per_s=1e12)
    shapes = net.shapes()
    for row, s in enumerate(splits):  # the upload at split s is the activation the client hands over
        assert table[s - 1].out_floats == int(np.prod(shapes[s]))  # shapes[0] is the input
        assert costs.bytes_up[row, 0] >= 32 * table[s - 1].out_floats * 4
