"""The paddle.sparse.nn layers tools/paddle_sparse_tensor_fixtures.py builds its legacy fixtures from: each a small
net on a COO tensor of SHAPE (or the layer's own `shape`) with 2 channels, returning a dense tensor."""

import paddle
import paddle.sparse as sp

SHAPE = [2, 5, 5, 5]   # batch, depth, height, width of every case's input


class SubmRelu(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv, self.relu = sp.nn.SubmConv3D(2, 3, 3, padding=1), sp.nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv(x)).to_dense()


class StridedBn(paddle.nn.Layer):
    """A strided conv (new output sites) without bias, its batch norm on the values, then relu."""

    def __init__(self):
        super().__init__()
        self.conv = sp.nn.Conv3D(2, 4, (3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1), bias_attr=False)
        self.bn, self.relu = sp.nn.BatchNorm(4), sp.nn.ReLU()

    def forward(self, x):
        return self.relu(self.bn(self.conv(x))).to_dense()


class Dilated(paddle.nn.Layer):
    """A dilated conv: new sites two apart. (Paddle's SubmConv3D with dilation loses sites: docs/sparse.md.)"""

    def __init__(self):
        super().__init__()
        self.conv = sp.nn.Conv3D(2, 3, 3, padding=2, dilation=2)

    def forward(self, x):
        return self.conv(x).to_dense()


class Residual(paddle.nn.Layer):
    """x + relu(subm(x)): x read twice (its gradient is a sum of two sparse ones), added on the same sites. The subm
    conv has no padding: Paddle centres its kernel on each site anyway."""

    def __init__(self):
        super().__init__()
        self.conv, self.relu = sp.nn.SubmConv3D(2, 2, 3), sp.nn.ReLU()

    def forward(self, x):
        return sp.add(x, self.relu(self.conv(x))).to_dense()


class NewSites(paddle.nn.Layer):
    """x + conv(x), the conv reaching sites x does not have: Paddle's add then merges the sites (right only when
    both tensors' sites are sorted, as here: docs/sparse.md)."""

    def __init__(self):
        super().__init__()
        self.conv = sp.nn.Conv3D(2, 2, 3, padding=1)

    def forward(self, x):
        return sp.add(x, self.conv(x)).to_dense()


class Shapes(paddle.nn.Layer):
    """sparse.reshape, sum (over a sparse dim: sites merge) and nn.Softmax (of the channels) after a subm conv.
    (Paddle's sparse.slice of a tensor with channels loses them: docs/sparse.md.)"""

    def __init__(self):
        super().__init__()
        self.conv, self.softmax = sp.nn.SubmConv3D(2, 3, 3, padding=1), sp.nn.Softmax()

    def forward(self, x):
        return self.softmax(sp.sum(sp.reshape(self.conv(x), [2, 25, 5, 3]), axis=2)).to_dense()


class Values(paddle.nn.Layer):
    """A plain conv (kernel 2, no padding), read through values(): the loss weights each stored value."""

    def __init__(self):
        super().__init__()
        self.conv = sp.nn.Conv3D(2, 3, 2)

    def forward(self, x):
        return self.conv(x).values()


class Second(paddle.nn.Layer):
    """A SECOND-like voxel backbone: two SubmConv3D/BatchNorm/ReLU blocks, a strided Conv3D block, to_dense, the
    depth folded into channels, and a dense 1x1 conv head."""

    def __init__(self):
        super().__init__()
        self.blocks = paddle.nn.LayerList([
            sp.nn.SubmConv3D(2, 4, 3, padding=1, bias_attr=False), sp.nn.BatchNorm(4), sp.nn.ReLU(),
            sp.nn.SubmConv3D(4, 4, 3, padding=1, bias_attr=False), sp.nn.BatchNorm(4), sp.nn.ReLU(),
            sp.nn.Conv3D(4, 6, 3, stride=2, padding=1, bias_attr=False), sp.nn.BatchNorm(6), sp.nn.ReLU()])
        self.head = paddle.nn.Conv2D(18, 2, 1)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        dense = x.to_dense()                                   # [N, D, H, W, C]
        dense = paddle.transpose(dense, [0, 1, 4, 2, 3])       # [N, D, C, H, W]
        return self.head(paddle.reshape(dense, [0, -1, 3, 3]))


class Planar(paddle.nn.Layer):
    """paddle.sparse.nn's 2-D layers on a [2, 5, 5] grid of 2 channels (shape): SubmConv2D, ReLU, a strided
    Conv2D with bias (sparse_conv3d with 2-D attributes and a sparse_add)."""

    shape = [2, 5, 5]

    def __init__(self):
        super().__init__()
        self.subm, self.relu = sp.nn.SubmConv2D(2, 3, 3, padding=1), sp.nn.ReLU()
        self.conv = sp.nn.Conv2D(3, 4, 2, stride=2, padding=1)

    def forward(self, x):
        return self.conv(self.relu(self.subm(x))).to_dense()
