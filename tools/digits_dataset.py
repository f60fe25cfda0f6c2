"""Write examples/digits/{train,test}.npz from the handwritten digits scikit-learn bundles (UCI's optical
recognition of handwritten digits: 1,797 8x8 images, 10 classes). Run once with an interpreter that has
scikit-learn; gradc itself never needs it.

    python tools/digits_dataset.py examples/digits
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

TEST_SIZE = 360   # a fifth of the set, the same examples every time


def main(out: Path) -> None:
    digits = load_digits()
    images = (digits.images / 16.0).astype("float32")[:, None, :, :]   # pixel counts 0..16 -> [0, 1]
    labels = digits.target.astype("int64")[:, None]
    order = np.random.default_rng(0).permutation(len(labels))
    test, train = order[:TEST_SIZE], order[TEST_SIZE:]
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "train.npz", img=images[train], label=labels[train])
    np.savez_compressed(out / "test.npz", img=images[test], label=labels[test])
    print(f"train: {len(train)} examples, test: {len(test)}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "examples/digits"))
