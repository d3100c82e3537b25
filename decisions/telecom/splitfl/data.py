"""Real image data for split-federated learning, offline, and its non-IID split over clients (numpy only)."""

from __future__ import annotations

import gzip
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from decisions.errors import InputError

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
"""Where Debian's ``dataset-fashion-mnist`` installs the four IDX gzip files."""
FASHION_MNIST_FILES = {
    "x_train": "train-images-idx3-ubyte.gz",
    "y_train": "train-labels-idx1-ubyte.gz",
    "x_test": "t10k-images-idx3-ubyte.gz",
    "y_test": "t10k-labels-idx1-ubyte.gz",
}
"""The package's file names (as installed by ``dataset-fashion-mnist`` 0.0~git20200523.55506a9-1)."""
FASHION_MNIST_CLASSES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)
"""Fashion-MNIST's class names, by label."""

_IDX_TYPES = {0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"),
              0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


DIGITS_IMAGES = 1797
"""Images of scikit-learn's bundled digits."""

DIGITS_TEST_SHARE = 0.2
"""Share of the digits held out for testing (``load_digits_data``'s default)."""


class Dataset(NamedTuple):
    """An image classification set: images ``(n, h, w, c)`` float32 in [0, 1], labels ``(n,)`` int32."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: tuple[str, ...]


def load_digits_data(test_share: float = DIGITS_TEST_SHARE, seed: int = 0) -> Dataset:
    """scikit-learn's bundled handwritten digits as 8x8x1 images in [0, 1], with a stratified test split.

    Args:
        test_share: share of the 1,797 images held out for testing (stratified by label), in (0, 1).
        seed: seed of the split.

    Returns:
        The ``Dataset`` (classes ``"0"`` .. ``"9"``).

    Raises:
        InputError: ``test_share`` outside (0, 1).
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_share < 1.0:
        raise InputError("test_share", f"must be in (0, 1), got {test_share}")
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]
    y = digits.target.astype(np.int32)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_share, random_state=seed, stratify=y
    )
    return Dataset(x_train, y_train, x_test, y_test, tuple(str(d) for d in range(10)))


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file (the MNIST format), gzipped or not, checking its magic number and size.

    The header is two zero bytes, a type code (0x08 unsigned byte, ... 0x0E double), the number of
    dimensions, then each dimension as a big-endian 32-bit integer; the data follows, row-major.

    Args:
        path: the file (``.gz`` is decompressed).

    Returns:
        The array, in the file's dtype (native byte order) and shape.

    Raises:
        InputError: (field ``data.path``) a bad magic number or a size that does not match the header.
    """
    path = Path(path)
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES or raw[3] == 0:
        raise InputError("data.path", f"{path} is not an IDX file (magic number {raw[:4].hex() or 'missing'})")
    dtype, ndim = _IDX_TYPES[raw[2]], raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise InputError("data.path", f"{path}: truncated IDX header")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise InputError("data.path", f"{path}: {len(raw) - header} data bytes, the header {shape} says {expected}")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def digits_sizes(test_share: float = DIGITS_TEST_SHARE) -> tuple[int, int]:
    """Training and test images of ``load_digits_data(test_share)``, without loading them."""
    test = math.ceil(test_share * DIGITS_IMAGES)
    return DIGITS_IMAGES - test, test


def fashion_mnist_folder(path: str | Path | None = None) -> Path:
    """The folder of the four Fashion-MNIST files (default ``FASHION_MNIST_DIR``), once each is there.

    Raises:
        InputError: (field ``data.path``) the folder or a file is missing.
    """
    folder = FASHION_MNIST_DIR if path is None else Path(path)
    missing = [name for name in FASHION_MNIST_FILES.values() if not (folder / name).is_file()]
    if missing:
        raise InputError(
            "data.path",
            f"Fashion-MNIST not found in {folder} (missing {', '.join(missing)}): install it with "
            "`apt-get install dataset-fashion-mnist` (Debian, MIT licence)",
        )
    return folder


def fashion_mnist_sizes(path: str | Path | None = None) -> tuple[int, int]:
    """Training and test images of the Fashion-MNIST in ``path``, read from the label files' headers.

    Raises:
        InputError: (field ``data.path``) a file is missing or a label file is not a 1-d IDX file.
    """
    folder = fashion_mnist_folder(path)
    return tuple(_idx_labels(folder / FASHION_MNIST_FILES[key]) for key in ("y_train", "y_test"))  # type: ignore[return-value]


def _idx_labels(path: Path) -> int:
    """The number of labels a 1-d IDX file (gzipped or not) says it holds, from its 8-byte header."""
    try:
        with (gzip.open(path) if path.suffix == ".gz" else path.open("rb")) as file:
            head = file.read(8)
    except (OSError, EOFError) as err:
        raise InputError("data.path", f"{path}: cannot read: {err}") from None
    if len(head) < 8 or head[:2] != b"\0\0" or head[2] not in _IDX_TYPES or head[3] != 1:
        raise InputError("data.path", f"{path} is not an IDX label file (magic number {head[:4].hex() or 'missing'})")
    return int.from_bytes(head[4:8], "big")


def load_fashion_mnist(path: str | Path | None = None) -> Dataset:
    """The real Fashion-MNIST from Debian's ``dataset-fashion-mnist`` package; nothing is downloaded.

    Args:
        path: the folder of the four IDX gzip files (default ``/usr/share/datasets/fashion-mnist``).

    Returns:
        The ``Dataset``: 60,000 train and 10,000 test images ``(n, 28, 28, 1)`` float32 in [0, 1].

    Raises:
        InputError: (field ``data.path``) a file is missing, is not IDX, or images and labels disagree.
    """
    folder = fashion_mnist_folder(path)
    arrays = {key: read_idx(folder / name) for key, name in FASHION_MNIST_FILES.items()}
    for part in ("train", "test"):
        x, y = arrays[f"x_{part}"], arrays[f"y_{part}"]
        if x.ndim != 3 or y.ndim != 1 or len(x) != len(y):
            raise InputError("data.path", f"{folder}: {part} images {x.shape} and labels {y.shape} disagree")
    return Dataset(
        (arrays["x_train"].astype(np.float32) / 255.0)[..., None],
        arrays["y_train"].astype(np.int32),
        (arrays["x_test"].astype(np.float32) / 255.0)[..., None],
        arrays["y_test"].astype(np.int32),
        FASHION_MNIST_CLASSES,
    )


def dirichlet_partition(
    labels: np.ndarray,
    clients: int,
    concentration: float,
    seed: int,
    min_per_client: int = 1,
    redraws: int = 20,
) -> list[np.ndarray]:
    """Split sample indices over clients with label skew: each class's samples by Dirichlet shares.

    For every class, shares over the clients are drawn from Dirichlet(``concentration`` * 1) and the
    class's (shuffled) samples are cut accordingly: a small concentration (0.1) gives each client a
    few classes, a large one (100) is close to IID. If a client gets fewer than ``min_per_client``
    samples, the whole draw is repeated (up to ``redraws`` times, the usual practice); if that still
    fails, the last draw is topped up by moving random samples from the clients with the most samples
    to the short ones, which keeps every index used exactly once.

    Args:
        labels: ``(n,)`` integer labels.
        clients: number of clients, at least 1.
        concentration: the Dirichlet concentration, > 0.
        seed: seed of the draw.
        min_per_client: fewest samples any client gets, at least 1.
        redraws: how many whole draws to try before topping up.

    Returns:
        One sorted ``int64`` index array per client; together they cover ``range(n)`` exactly once.

    Raises:
        InputError: ``concentration`` not positive, ``clients`` < 1, ``min_per_client`` < 1, or
            ``clients`` too many for the samples (some client would get fewer than ``min_per_client``).
    """
    labels = np.asarray(labels)
    if not np.isfinite(concentration) or concentration <= 0:
        raise InputError("concentration", f"must be > 0, got {concentration}")
    if clients < 1:
        raise InputError("clients", f"must be at least 1, got {clients}")
    if min_per_client < 1:
        raise InputError("min_per_client", f"must be at least 1, got {min_per_client}")
    n = len(labels)
    if clients * min_per_client > n:
        raise InputError(
            "clients",
            f"{clients} clients with at least {min_per_client} samples each need {clients * min_per_client}, "
            f"only {n} given: some client would get no data",
        )
    rng = np.random.default_rng(seed)
    by_class = [np.flatnonzero(labels == c) for c in np.unique(labels)]
    parts: list[list[int]] = []
    for _ in range(max(1, redraws)):
        parts = [[] for _ in range(clients)]
        for idx in by_class:
            idx = rng.permutation(idx)
            shares = rng.dirichlet(np.full(clients, float(concentration)))
            cuts = (np.cumsum(shares)[:-1] * len(idx)).astype(int)
            for k, chunk in enumerate(np.split(idx, cuts)):
                parts[k].extend(chunk.tolist())
        if min(len(p) for p in parts) >= min_per_client:
            break
    else:  # top up the short clients from the largest ones
        for k in range(clients):
            while len(parts[k]) < min_per_client:
                donor = max(range(clients), key=lambda j: len(parts[j]))
                parts[k].append(parts[donor].pop(int(rng.integers(len(parts[donor])))))
    return [np.sort(np.asarray(p, dtype=np.int64)) for p in parts]
