"""Cases for the rearranging vision ops: shuffles in both layouts, unfold/fold with strides, paddings and
dilations."""

from . import Case, rng

r = rng(12)


def randn(*shape):
    return r.standard_normal(shape)


CASES = [
    Case("pixel_shuffle", {"X": randn(1, 8, 2, 3)}, {"upscale_factor": 2}),
    Case("pixel_shuffle", {"X": randn(2, 2, 3, 9)}, {"upscale_factor": 3, "data_format": "NHWC"}),
    Case("pixel_unshuffle", {"X": randn(1, 2, 4, 6)}, {"downscale_factor": 2}),
    Case("pixel_unshuffle", {"X": randn(1, 6, 3, 2)}, {"downscale_factor": 3, "data_format": "NHWC"}),
    Case("channel_shuffle", {"X": randn(2, 6, 2, 2)}, {"groups": 3}),
    Case("channel_shuffle", {"X": randn(1, 2, 3, 4)}, {"groups": 2, "data_format": "NHWC"}),
    Case("unfold", {"X": randn(2, 2, 4, 5)}, {"kernel_sizes": [2, 3]}),
    Case("unfold", {"X": randn(1, 2, 5, 5)}, {"kernel_sizes": [2, 2], "strides": [2, 1], "paddings": [1, 0, 2, 1],
                                             "dilations": [1, 2]}),
    Case("fold", {"X": randn(2, 8, 6)}, {"output_sizes": [3, 4], "kernel_sizes": [2, 2]}),
    Case("fold", {"X": randn(1, 12, 9)}, {"output_sizes": [4, 5], "kernel_sizes": [2, 3], "strides": [2, 2],
                                         "paddings": [1, 1, 1, 1], "dilations": [1, 1]}),
]
