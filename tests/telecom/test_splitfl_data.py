"""Tests of split-FL data, non-IID partition, device tiers and dynamics, and the per-split cost model (issue 22)."""

from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from decisions.errors import InputError
from decisions.telecom.splitfl.costs import ClientSpecs, round_latency, split_costs
from decisions.telecom.splitfl.data import (
    FASHION_MNIST_DIR,
    FASHION_MNIST_FILES,
    dirichlet_partition,
    load_digits_data,
    load_fashion_mnist,
    read_idx,
)
from decisions.telecom.splitfl.devices import DeviceScenario


@dataclass(frozen=True)
class Layer:
    name: str
    macs: int
    out_floats: int
    params: int


# FedAdapt's VGG5 (CIFAR-10) table, per sample, forward (note section 2d; dense 4096->128 outputs 128).
VGG5 = [
    Layer("conv1", 884_736, 32_768, 896),
    Layer("pool1", 0, 8_192, 0),
    Layer("conv2", 4_718_592, 16_384, 18_496),
    Layer("pool2", 0, 4_096, 0),
    Layer("conv3", 2_359_296, 4_096, 36_928),
    Layer("fc1", 524_288, 128, 524_416),
    Layer("fc2", 1_280, 10, 1_290),
]


def one_client(**kw: float) -> ClientSpecs:
    base = dict(macs_per_s=1e9, uplink_mbps=10.0, downlink_mbps=10.0, latency_s=0.0, memory_mb=1024.0,
                power_compute_w=4.0, power_tx_w=1.0, power_idle_w=1.0)
    base.update(kw)
    return ClientSpecs(*(np.array([v], dtype=float) for v in base.values()))


# --- data ---------------------------------------------------------------------------------------


def test_digits_shapes_and_stratified_split() -> None:
    d = load_digits_data(test_share=0.2, seed=0)
    assert d.x_train.shape[1:] == (8, 8, 1) and d.x_train.dtype == np.float32
    assert len(d.x_train) + len(d.x_test) == 1797 and len(d.x_test) == 360
    assert 0.0 <= d.x_train.min() and d.x_train.max() <= 1.0
    train_share = np.bincount(d.y_train, minlength=10) / len(d.y_train)
    test_share = np.bincount(d.y_test, minlength=10) / len(d.y_test)
    assert np.abs(train_share - test_share).max() < 0.01
    assert d.classes == tuple("0123456789")
    with pytest.raises(InputError, match="test_share"):
        load_digits_data(test_share=1.0)


def write_idx(path: Path, array: np.ndarray) -> None:
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    path.write_bytes(gzip.compress(header + array.astype(np.uint8).tobytes()))


def test_idx_reader_and_fashion_layout(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (5, 28, 28)).astype(np.uint8)
    labels = np.array([0, 3, 9, 1, 2], dtype=np.uint8)
    for key, name in FASHION_MNIST_FILES.items():
        write_idx(tmp_path / name, images if key.startswith("x") else labels)
    np.testing.assert_array_equal(read_idx(tmp_path / FASHION_MNIST_FILES["x_train"]), images)
    d = load_fashion_mnist(tmp_path)
    assert d.x_train.shape == (5, 28, 28, 1) and d.y_test.tolist() == labels.tolist()
    np.testing.assert_allclose(d.x_test[..., 0] * 255, images, atol=1e-4)
    bad = tmp_path / "bad.gz"
    bad.write_bytes(gzip.compress(b"\x01\x02\x08\x01\x00\x00\x00\x01\x07"))
    with pytest.raises(InputError, match="not an IDX file"):
        read_idx(bad)
    short = tmp_path / "short.gz"
    short.write_bytes(gzip.compress(struct.pack(">BBBBI", 0, 0, 8, 1, 4) + b"\x01"))
    with pytest.raises(InputError, match="header"):
        read_idx(short)
    with pytest.raises(InputError, match="apt-get install dataset-fashion-mnist") as err:
        load_fashion_mnist(tmp_path / "nowhere")
    assert err.value.field == "data.path"


@pytest.mark.skipif(
    not (FASHION_MNIST_DIR / FASHION_MNIST_FILES["y_test"]).is_file(),
    reason="Debian package dataset-fashion-mnist not installed (apt-get install dataset-fashion-mnist)",
)
def test_real_fashion_mnist_labels() -> None:
    y_test = read_idx(FASHION_MNIST_DIR / FASHION_MNIST_FILES["y_test"])
    assert y_test.shape == (10_000,) and np.bincount(y_test).tolist() == [1000] * 10


def mean_label_entropy(labels: np.ndarray, parts: list[np.ndarray]) -> float:
    out = []
    for idx in parts:
        p = np.bincount(labels[idx], minlength=10) / len(idx)
        out.append(-(p[p > 0] * np.log(p[p > 0])).sum())
    return float(np.mean(out))


def test_dirichlet_partition_covers_and_skews() -> None:
    labels = np.repeat(np.arange(10), 100)
    skewed = dirichlet_partition(labels, 10, 0.1, seed=0, min_per_client=5)
    flat = dirichlet_partition(labels, 10, 100.0, seed=0)
    for parts in (skewed, flat):
        np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(1000))
    assert min(len(p) for p in skewed) >= 5
    assert mean_label_entropy(labels, skewed) < 0.6 * mean_label_entropy(labels, flat)
    assert mean_label_entropy(labels, flat) > 0.95 * np.log(10)
    # topping up: a minimum no random draw meets is still met, every index once
    tight = dirichlet_partition(labels, 10, 0.05, seed=1, min_per_client=100, redraws=1)
    assert [len(p) for p in tight] == [100] * 10
    np.testing.assert_array_equal(np.sort(np.concatenate(tight)), np.arange(1000))
    again = dirichlet_partition(labels, 10, 0.1, seed=0, min_per_client=5)
    assert all(np.array_equal(a, b) for a, b in zip(skewed, again, strict=True))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"clients": 3, "concentration": 0.0}, "concentration"),
        ({"clients": 3, "concentration": -1.0}, "concentration"),
        ({"clients": 0, "concentration": 1.0}, "clients"),
        ({"clients": 11, "concentration": 1.0}, "clients"),
    ],
)
def test_dirichlet_partition_bad_inputs(kwargs: dict, field: str) -> None:
    with pytest.raises(InputError) as err:
        dirichlet_partition(np.arange(10) % 2, seed=0, **kwargs)
    assert err.value.field == field


# --- devices ------------------------------------------------------------------------------------


def tiers_with(**weak: float) -> dict:
    tiers = {k: v.model_dump() for k, v in DeviceScenario().tiers.items()}
    tiers["weak"].update(weak)
    return {"tiers": tiers}


def test_device_tier_validation() -> None:
    for bad in (0, -5):
        with pytest.raises(InputError) as err:
            DeviceScenario.parse(tiers_with(link_mbps=bad))
        assert err.value.field == "devices.tiers.weak.link_mbps"
    with pytest.raises(InputError, match="devices.tiers.weak.turbo"):
        DeviceScenario.parse(tiers_with(turbo=1))
    with pytest.raises(InputError, match="devices.deadline"):
        DeviceScenario.parse({"deadline": 3})
    with pytest.raises(InputError, match="rejoin_share"):
        DeviceScenario.parse({"battery_reserve": 0.5, "rejoin_share": 0.4})
    sc = DeviceScenario()
    assert sum(t.clients for t in sc.tiers.values()) == 10


# --- costs --------------------------------------------------------------------------------------


def test_vgg5_uplink_figure_from_the_note() -> None:
    c = split_costs(VGG5, 1, batch=100, local_steps=1, clients=one_client(), server_macs_per_s=1e12)
    assert c.uplink_s[0] == pytest.approx(100 * 32_768 * 32 / 10e6)
    assert c.uplink_s[0] == pytest.approx(10.5, abs=0.02)
    fast = split_costs(VGG5, [2, 4], 100, 1, one_client(uplink_mbps=50.0), 1e12)
    np.testing.assert_allclose(fast.uplink_s[:, 0], [0.52, 0.26], atol=0.01)
    assert c.bytes_up[0] == 100 * 32_768 * 4 + 896 * 4


def test_deeper_split_costs_and_memory_flag() -> None:
    splits = np.arange(1, len(VGG5) + 1)  # client-side layers, as model.SplitNet counts them
    c = split_costs(VGG5, splits, 100, 5, one_client(), 1e12)
    assert c.round_time_s.shape == (len(VGG5), 1)
    dev = c.device_compute_s[:, 0]
    assert (np.diff(dev) >= 0).all() and dev[-1] > dev[0]
    assert (np.diff(c.server_compute_s[:, 0]) <= 0).all() and c.server_compute_s[-1, 0] == 0
    assert c.uplink_s[1, 0] < c.uplink_s[0, 0] and c.uplink_s[3, 0] < c.uplink_s[2, 0]
    assert c.device_compute_s[2, 0] == pytest.approx(5 * 3 * 100 * 5_603_328 / 1e9)
    tot = c.device_compute_s + c.uplink_s + c.downlink_s + c.server_compute_s + c.sync_s
    np.testing.assert_allclose(c.round_time_s, tot)
    mem = c.client_memory_mb[:, 0]
    assert (np.diff(mem) > 0).all()
    small = split_costs(VGG5, splits, 100, 5, one_client(memory_mb=float(mem[2]) + 0.01), 1e12)
    assert small.fits_memory[:3, 0].all() and not small.fits_memory[3:, 0].any()


def test_round_latency_is_the_straggler() -> None:
    sc = DeviceScenario()
    names, specs = sc.tier_specs()
    c = split_costs(VGG5, [1, 5], 50, 2, specs, sc.server_macs_per_s)
    assert c.round_time_s.shape == (2, 3)
    np.testing.assert_allclose(round_latency(c), c.round_time_s.max(axis=1))
    # the straggler moves with the split: at split 1 the phone's 2 Mb/s uplink carries the large
    # activations; at split 5 the weak board computes most of the network
    assert round_latency(c)[0] == c.round_time_s[0, names.index("medium")]
    assert round_latency(c)[1] == c.round_time_s[1, names.index("weak")]
    only_strong = np.array([n == "strong" for n in names])
    np.testing.assert_allclose(round_latency(c, only_strong), c.round_time_s[:, names.index("strong")])
    assert (c.energy_j > 0).all()
    for bad in (0, 8):
        with pytest.raises(InputError, match="split: must be integers in"):
            split_costs(VGG5, bad, 50, 2, specs, 1e12)
