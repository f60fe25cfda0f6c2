// CPU kernels for Paddle3D's bev_pool_v2 and its hand-written backward op bev_pool_v2_bkwd (paddle3d/ops/bev_pool_v2,
// bev_pool_v2_backward), which ship CUDA kernels only. The op definitions are the suite's; the kernels follow its CUDA
// kernels' formulas (each interval's sum written to its first point's cell; the backward's assignments), for
// tools/paddle_ext_ops.py. Built with paddle.utils.cpp_extension.load.
#include <vector>

#include "paddle/extension.h"

std::vector<paddle::Tensor> BevPoolV2(const paddle::Tensor& depth, const paddle::Tensor& feat,
                                      const paddle::Tensor& ranks_depth, const paddle::Tensor& ranks_feat,
                                      const paddle::Tensor& ranks_bev, const paddle::Tensor& lengths,
                                      const paddle::Tensor& starts, const std::vector<int>& bev_feat_shape) {
  const int64_t c = feat.shape()[3];
  std::vector<int64_t> shape(bev_feat_shape.begin(), bev_feat_shape.end());
  auto out = paddle::full(shape, 0, feat.type(), paddle::CPUPlace());
  for (int64_t j = 0; j < lengths.shape()[0]; ++j) {
    const int s = starts.data<int>()[j];
    for (int64_t k = 0; k < c; ++k) {
      float sum = 0;
      for (int i = 0; i < lengths.data<int>()[j]; ++i)
        sum += feat.data<float>()[ranks_feat.data<int>()[s + i] * c + k] * depth.data<float>()[ranks_depth.data<int>()[s + i]];
      out.data<float>()[ranks_bev.data<int>()[s] * c + k] = sum;
    }
  }
  return {out};
}

std::vector<paddle::Tensor> BevPoolV2Bkwd(const paddle::Tensor& dout, const paddle::Tensor& depth,
                                          const paddle::Tensor& feat, const paddle::Tensor& ranks_depth,
                                          const paddle::Tensor& ranks_feat, const paddle::Tensor& ranks_bev,
                                          const paddle::Tensor& lengths, const paddle::Tensor& starts) {
  const int64_t c = dout.shape()[3];
  auto depth_grad = paddle::full(depth.shape(), 0, depth.type(), paddle::CPUPlace());
  auto feat_grad = paddle::full(feat.shape(), 0, feat.type(), paddle::CPUPlace());
  const int *rd = ranks_depth.data<int>(), *rf = ranks_feat.data<int>(), *rb = ranks_bev.data<int>();
  for (int64_t j = 0; j < lengths.shape()[0]; ++j) {
    const int s = starts.data<int>()[j], n = lengths.data<int>()[j];
    for (int i = 0; i < n; ++i) {
      float sum = 0;
      for (int64_t k = 0; k < c; ++k) sum += dout.data<float>()[rb[s + i] * c + k] * feat.data<float>()[rf[s + i] * c + k];
      depth_grad.data<float>()[rd[s + i]] = sum;
    }
    for (int64_t k = 0; k < c; ++k) {
      float sum = 0;
      for (int i = 0; i < n; ++i) sum += dout.data<float>()[rb[s + i] * c + k] * depth.data<float>()[rd[s + i]];
      feat_grad.data<float>()[rf[s] * c + k] = sum;
    }
  }
  return {depth_grad, feat_grad};
}

using Shape = std::vector<int64_t>;
using Dtype = paddle::DataType;

std::vector<Shape> BevPoolShape(Shape, Shape, Shape, Shape, Shape, Shape, Shape, const std::vector<int>& bev) {
  return {{bev[0], bev[1], bev[2], bev[3]}};
}
std::vector<Dtype> BevPoolDtype(Dtype, Dtype feat, Dtype, Dtype, Dtype, Dtype, Dtype) { return {feat}; }
std::vector<Shape> BkwdShape(Shape, Shape depth, Shape feat, Shape, Shape, Shape, Shape, Shape) {
  return {depth, feat};
}
std::vector<Dtype> BkwdDtype(Dtype, Dtype depth, Dtype feat, Dtype, Dtype, Dtype, Dtype, Dtype) {
  return {depth, feat};
}

PD_BUILD_OP(bev_pool_v2)
    .Inputs({"_depth", "_feat", "_ranks_depth", "_ranks_feat", "_ranks_bev", "_interval_lengths", "_interval_starts"})
    .Attrs({"_bev_feat_shape: std::vector<int>"})
    .Outputs({"out"})
    .SetKernelFn(PD_KERNEL(BevPoolV2))
    .SetInferShapeFn(PD_INFER_SHAPE(BevPoolShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(BevPoolDtype));

PD_BUILD_OP(bev_pool_v2_bkwd)
    .Inputs({"_out_grad", "_depth", "_feat", "_ranks_depth", "_ranks_feat", "_ranks_bev", "_interval_lengths",
             "_interval_starts"})
    .Outputs({"_depth_grad", "_feat_grad"})
    .SetKernelFn(PD_KERNEL(BevPoolV2Bkwd))
    .SetInferShapeFn(PD_INFER_SHAPE(BkwdShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(BkwdDtype));
