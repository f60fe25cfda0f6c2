"""Rows: padding, resampling, pixel/channel shuffles, unfold/fold, flatten and identity layers."""

from paddle import nn

from .spec import f, given, table

PADDING = table(
    "padding",
    *((f"pad1d_{mode}", lambda x, mode=mode: nn.Pad1D([2, 1], mode=mode)(x), f(2, 3, 5))
      for mode in ("constant", "reflect", "replicate", "circular")),
    *((f"pad2d_{mode}", lambda x, mode=mode: nn.Pad2D([1, 0, 2, 1], mode=mode)(x), f(2, 2, 4, 4))
      for mode in ("constant", "reflect", "replicate", "circular")),
    *((f"pad3d_{mode}", lambda x, mode=mode: nn.Pad3D([1, 0, 1, 2, 0, 1], mode=mode)(x), f(1, 2, 3, 3, 3))
      for mode in ("constant", "reflect", "replicate", "circular")),
    ("pad1d_constant_value_nlc", lambda x: nn.Pad1D(1, value=0.5, data_format="NLC")(x), f(2, 5, 3)),
    ("pad2d_reflect_nhwc", lambda x: nn.Pad2D([1, 1, 2, 0], mode="reflect", data_format="NHWC")(x), f(2, 4, 4, 2)),
    ("pad3d_replicate_ndhwc", lambda x: nn.Pad3D(1, mode="replicate", data_format="NDHWC")(x), f(1, 2, 3, 3, 2)),
    ("zero_pad1d", lambda x: nn.ZeroPad1D([1, 2])(x), f(2, 3, 4)),
    ("zero_pad2d", lambda x: nn.ZeroPad2D([1, 0, 0, 2])(x), f(2, 2, 3, 3)),
    ("zero_pad3d", lambda x: nn.ZeroPad3D(1)(x), f(1, 2, 2, 2, 2)),
    ("constant_pad2d", lambda x: nn.ConstantPad2D([1, 1, 0, 1], 0.3)(x), f(2, 2, 3, 3)),
    ("reflection_pad1d", lambda x: nn.ReflectionPad1D([2, 1])(x), f(2, 3, 5)),
    ("replication_pad2d", lambda x: nn.ReplicationPad2D(1)(x), f(2, 2, 3, 3)),
    ("circular_pad3d", lambda x: nn.CircularPad3D(1)(x), f(1, 2, 3, 3, 3)),
)

UPSAMPLE = table(
    "upsample",
    *((f"upsample_{mode}{'_align' if align else ''}",
       lambda x, mode=mode, align=align: nn.Upsample(scale_factor=2, mode=mode, align_corners=align)(x), f(*shape))
      for mode, shape in (("linear", (2, 2, 4)), ("bilinear", (2, 2, 3, 4)), ("bicubic", (2, 2, 3, 4)),
                          ("trilinear", (1, 2, 2, 3, 3)))
      for align in (False, True)),
    ("upsample_nearest", lambda x: nn.Upsample(scale_factor=2)(x), f(2, 2, 3, 3)),
    ("upsample_nearest_size", lambda x: nn.Upsample(size=[5, 7])(x), f(2, 2, 3, 3)),
    ("upsample_nearest_1d", lambda x: nn.Upsample(scale_factor=3, mode="nearest", data_format="NCW")(x), f(2, 2, 3)),
    ("upsample_nearest_3d", lambda x: nn.Upsample(scale_factor=2, data_format="NCDHW")(x), f(1, 2, 2, 2, 3)),
    ("upsample_bilinear_align_mode1", lambda x: nn.Upsample(scale_factor=2, mode="bilinear", align_mode=1)(x),
     f(2, 2, 3, 3)),
    ("upsample_bilinear_size", lambda x: nn.Upsample(size=[5, 4], mode="bilinear")(x), f(2, 2, 3, 3)),
    ("upsample_bilinear_fractional", lambda x: nn.Upsample(scale_factor=1.5, mode="bilinear")(x), f(2, 2, 4, 4)),
    ("upsample_bilinear_downsample", lambda x: nn.Upsample(size=[2, 3], mode="bilinear")(x), f(2, 2, 5, 5)),
    ("upsample_bilinear_nhwc", lambda x: nn.Upsample(scale_factor=2, mode="bilinear", data_format="NHWC")(x),
     f(2, 3, 3, 2)),
    ("upsample_nearest_nhwc", lambda x: nn.Upsample(scale_factor=[2, 3], data_format="NHWC")(x), f(2, 2, 2, 2)),
    ("upsample_bicubic_size", lambda x: nn.Upsample(size=[4, 5], mode="bicubic", align_corners=True)(x),
     f(1, 2, 3, 3)),
    ("upsample_trilinear_ndhwc", lambda x: nn.Upsample(scale_factor=2, mode="trilinear", data_format="NDHWC")(x),
     f(1, 2, 2, 2, 2)),
    ("upsample_bilinear_out_size_tensor", lambda x, size: nn.Upsample(size=size, mode="bilinear")(x),
     f(2, 2, 3, 3), given([5, 4], "int32")),
    ("upsample_nearest_size_tensor_list", lambda x, height: nn.Upsample(size=[height, 4])(x),
     f(2, 2, 3, 3), given([5], "int32")),
    ("upsample_bilinear_scale_tensor", lambda x, scale: nn.Upsample(scale_factor=scale, mode="bilinear")(x),
     f(2, 2, 3, 3), given([2.0, 1.5], "float32")),
    ("upsampling_nearest2d", lambda x: nn.UpsamplingNearest2D(scale_factor=2)(x), f(2, 2, 3, 3)),
    ("upsampling_bilinear2d", lambda x: nn.UpsamplingBilinear2D(size=[5, 6])(x), f(2, 2, 3, 3)),
)

RESHAPE = table(
    "shape",
    ("pixel_shuffle", lambda x: nn.PixelShuffle(2)(x), f(2, 8, 2, 3)),
    ("pixel_shuffle_nhwc", lambda x: nn.PixelShuffle(2, data_format="NHWC")(x), f(2, 2, 3, 8)),
    ("pixel_unshuffle", lambda x: nn.PixelUnshuffle(2)(x), f(2, 2, 4, 6)),
    ("pixel_unshuffle_nhwc", lambda x: nn.PixelUnshuffle(2, data_format="NHWC")(x), f(2, 4, 4, 2)),
    ("channel_shuffle", lambda x: nn.ChannelShuffle(3)(x), f(2, 6, 2, 2)),
    ("channel_shuffle_nhwc", lambda x: nn.ChannelShuffle(2, data_format="NHWC")(x), f(2, 2, 2, 6)),
    ("unfold", lambda x: nn.Unfold(2)(x), f(2, 3, 4, 4)),
    ("unfold_stride_pad_dilation", lambda x: nn.Unfold([2, 3], dilations=2, paddings=1, strides=[1, 2])(x),
     f(2, 2, 5, 6)),
    ("fold", lambda x: nn.Fold([4, 5], 2)(x), f(2, 12, 12)),
    ("fold_stride_pad", lambda x: nn.Fold([5, 5], 3, paddings=1, strides=2)(x), f(2, 18, 9)),
    ("flatten", lambda x: nn.Flatten()(x), f(2, 3, 2, 2)),
    ("flatten_middle", lambda x: nn.Flatten(1, 2)(x), f(2, 3, 2, 2)),
    ("unflatten", lambda x: nn.Unflatten(1, [2, 3])(x), f(2, 6, 2)),
    ("identity", lambda x: nn.Identity()(x), f(2, 3)),
)

ROWS = PADDING + UPSAMPLE + RESHAPE
