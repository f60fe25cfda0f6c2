// CPU kernels for Paddle3D's PointNet++ ops (paddle3d/ops/pointnet2: farthest_point_sample, ball_query_batch,
// ball_query_stack, voxel_query_wrapper, gather_operation, grouping_operation_batch, grouping_operation_stack) and
// roiaware_pool3d's points_in_boxes_gpu, which ship CUDA kernels only. The op definitions (names, slots, attributes, grad ops) are the suite's; the kernels are written here from
// the CUDA kernels' formulas (float32 squared distances, the first farthest point, the first nsample points of a
// ball padded with the first), for tools/paddle_ext_ops.py. Built with paddle.utils.cpp_extension.load.
#include <cmath>
#include <vector>

#include "paddle/extension.h"

namespace {

float squared(const float* a, const float* b) {
  const float dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
  return dx * dx + dy * dy + dz * dz;
}

// the first nsample points of xyz (n of them) within radius of center, padded with the first; false when none
bool ball(const float* center, const float* xyz, int64_t n, float radius, int nsample, int* idx) {
  const float radius2 = radius * radius;
  int found = 0;
  for (int64_t k = 0; k < n && found < nsample; ++k) {
    if (squared(center, xyz + 3 * k) < radius2) {
      if (found == 0)
        for (int l = 0; l < nsample; ++l) idx[l] = k;
      idx[found++] = k;
    }
  }
  return found > 0;
}

std::vector<int64_t> starts_of(const paddle::Tensor& counts) {
  std::vector<int64_t> starts{0};
  for (int64_t b = 0; b < counts.shape()[0]; ++b) starts.push_back(starts.back() + counts.data<int>()[b]);
  return starts;
}

}  // namespace

using Shapes = std::vector<std::vector<int64_t>>;
using Dtypes = std::vector<paddle::DataType>;
using Shape = std::vector<int64_t>;
using Dtype = paddle::DataType;

Shapes FpsShape(Shape points, const int& npoints) { return {{points[0], npoints}}; }
Shapes BallBatchShape(Shape centers, Shape, const float&, const int& nsample) {
  return {{centers[0], centers[1], nsample}};
}
Shapes BallStackShape(Shape centers, Shape, Shape, Shape, const float&, const int& nsample) {
  return {{centers[0], nsample}};
}
Shapes GatherShape(Shape points, Shape idx) { return {{points[0], points[1], idx[1]}}; }
Shapes GroupBatchShape(Shape points, Shape idx) { return {{points[0], points[1], idx[1], idx[2]}}; }
Shapes GroupStackShape(Shape features, Shape, Shape idx, Shape) { return {{idx[0], features[1], idx[1]}}; }
Dtypes IndexDtype1(Dtype) { return {Dtype::INT32}; }
Dtypes IndexDtype2(Dtype, Dtype) { return {Dtype::INT32}; }
Dtypes IndexDtype4(Dtype, Dtype, Dtype, Dtype) { return {Dtype::INT32}; }
Dtypes FirstDtype4(Dtype features, Dtype, Dtype, Dtype) { return {features}; }

std::vector<paddle::Tensor> FarthestPointSample(const paddle::Tensor& points, const int& npoints) {
  const int64_t b = points.shape()[0], n = points.shape()[1];
  auto idx = paddle::full({b, npoints}, 0, paddle::DataType::INT32, paddle::CPUPlace());
  for (int64_t i = 0; i < b; ++i) {
    const float* cloud = points.data<float>() + i * n * 3;
    std::vector<float> nearest(n, 1e10f);
    int chosen = 0;
    for (int j = 1; j < npoints; ++j) {
      int best_k = 0;
      float best = -1;
      for (int64_t k = 0; k < n; ++k) {
        nearest[k] = std::min(squared(cloud + 3 * k, cloud + 3 * chosen), nearest[k]);
        if (nearest[k] > best) best = nearest[k], best_k = k;
      }
      chosen = idx.data<int>()[i * npoints + j] = best_k;
    }
  }
  return {idx};
}

PD_BUILD_OP(farthest_point_sample)
    .Inputs({"points_tensor"})
    .Outputs({"idx_tensor"})
    .Attrs({"npoints: int"})
    .SetKernelFn(PD_KERNEL(FarthestPointSample))
    .SetInferShapeFn(PD_INFER_SHAPE(FpsShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(IndexDtype1));

std::vector<paddle::Tensor> BallQueryBatch(const paddle::Tensor& centers, const paddle::Tensor& xyz,
                                           const float& radius, const int& nsample) {
  const int64_t b = centers.shape()[0], m = centers.shape()[1], n = xyz.shape()[1];
  auto idx = paddle::full({b, m, nsample}, 0, paddle::DataType::INT32, paddle::CPUPlace());
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < m; ++j)
      ball(centers.data<float>() + (i * m + j) * 3, xyz.data<float>() + i * n * 3, n, radius, nsample,
           idx.data<int>() + (i * m + j) * nsample);
  return {idx};
}

PD_BUILD_OP(ball_query_batch)
    .Inputs({"new_xyz_tensor", "xyz_tensor"})
    .Outputs({"idx"})
    .Attrs({"radius: float", "nsample: int"})
    .SetKernelFn(PD_KERNEL(BallQueryBatch))
    .SetInferShapeFn(PD_INFER_SHAPE(BallBatchShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(IndexDtype2));

std::vector<paddle::Tensor> BallQueryStack(const paddle::Tensor& centers, const paddle::Tensor& center_counts,
                                           const paddle::Tensor& xyz, const paddle::Tensor& xyz_counts,
                                           const float& radius, const int& nsample) {
  const int64_t m = centers.shape()[0];
  auto idx = paddle::full({m, nsample}, 0, paddle::DataType::INT32, paddle::CPUPlace());
  const auto center_starts = starts_of(center_counts), xyz_starts = starts_of(xyz_counts);
  for (size_t b = 0; b + 1 < center_starts.size(); ++b)
    for (int64_t j = center_starts[b]; j < center_starts[b + 1]; ++j) {
      int* row = idx.data<int>() + j * nsample;
      if (!ball(centers.data<float>() + 3 * j, xyz.data<float>() + 3 * xyz_starts[b],
                xyz_starts[b + 1] - xyz_starts[b], radius, nsample, row))
        row[0] = -1;
    }
  return {idx};
}

PD_BUILD_OP(ball_query_stack)
    .Inputs({"new_xyz_tensor", "new_xyz_batch_cnt_tensor", "xyz_tensor", "xyz_batch_cnt_tensor"})
    .Outputs({"idx_tensor"})
    .Attrs({"radius: float", "nsample: int"})
    .SetKernelFn(PD_KERNEL(BallQueryStack))
    .SetInferShapeFn(PD_INFER_SHAPE(BallStackShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(IndexDtype4));

// gather_operation and grouping_operation_batch: out[b, c, i] = points[b, c, idx[b, i]] over idx's trailing dims
std::vector<paddle::Tensor> GatherPoints(const paddle::Tensor& points, const paddle::Tensor& idx) {
  const int64_t b = points.shape()[0], c = points.shape()[1], n = points.shape()[2];
  const int64_t picks = idx.numel() / b;
  std::vector<int64_t> shape{b, c};
  for (size_t d = 1; d < idx.shape().size(); ++d) shape.push_back(idx.shape()[d]);
  auto out = paddle::full(shape, 0, points.type(), paddle::CPUPlace());
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t p = 0; p < picks; ++p)
        out.data<float>()[(i * c + j) * picks + p] = points.data<float>()[(i * c + j) * n + idx.data<int>()[i * picks + p]];
  return {out};
}

std::vector<paddle::Tensor> GatherPointsGrad(const paddle::Tensor& dout, const paddle::Tensor& idx,
                                             const paddle::Tensor& points) {
  const int64_t b = points.shape()[0], c = points.shape()[1], n = points.shape()[2];
  const int64_t picks = idx.numel() / b;
  auto grad = paddle::full(points.shape(), 0, points.type(), paddle::CPUPlace());
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t p = 0; p < picks; ++p)
        grad.data<float>()[(i * c + j) * n + idx.data<int>()[i * picks + p]] += dout.data<float>()[(i * c + j) * picks + p];
  return {grad};
}

std::vector<paddle::DataType> FirstDtype(paddle::DataType points, paddle::DataType) { return {points}; }

PD_BUILD_OP(gather_operation)
    .Inputs({"points", "idx"})
    .Outputs({"out"})
    .SetKernelFn(PD_KERNEL(GatherPoints))
    .SetInferShapeFn(PD_INFER_SHAPE(GatherShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(FirstDtype));

PD_BUILD_GRAD_OP(gather_operation)
    .Inputs({paddle::Grad("out"), "idx", "points"})
    .Outputs({paddle::Grad("points")})
    .SetKernelFn(PD_KERNEL(GatherPointsGrad));

PD_BUILD_OP(grouping_operation_batch)
    .Inputs({"points_tensor", "idx_tensor"})
    .Outputs({"out_tensor"})
    .SetKernelFn(PD_KERNEL(GatherPoints))
    .SetInferShapeFn(PD_INFER_SHAPE(GroupBatchShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(FirstDtype));

PD_BUILD_GRAD_OP(grouping_operation_batch)
    .Inputs({paddle::Grad("out_tensor"), "idx_tensor", "points_tensor"})
    .Outputs({paddle::Grad("points_tensor")})
    .SetKernelFn(PD_KERNEL(GatherPointsGrad));

// grouping_operation_stack: out[m, c, s] = features[start of m's batch + idx[m, s], c]
std::vector<paddle::Tensor> GroupStack(const paddle::Tensor& features, const paddle::Tensor& feature_counts,
                                       const paddle::Tensor& idx, const paddle::Tensor& idx_counts) {
  const int64_t m = idx.shape()[0], s = idx.shape()[1], c = features.shape()[1];
  auto out = paddle::full({m, c, s}, 0, features.type(), paddle::CPUPlace());
  const auto feature_starts = starts_of(feature_counts), idx_starts = starts_of(idx_counts);
  for (size_t b = 0; b + 1 < idx_starts.size(); ++b)
    for (int64_t i = idx_starts[b]; i < idx_starts[b + 1]; ++i)
      for (int64_t j = 0; j < c; ++j)
        for (int64_t k = 0; k < s; ++k)
          out.data<float>()[(i * c + j) * s + k] =
              features.data<float>()[(feature_starts[b] + idx.data<int>()[i * s + k]) * c + j];
  return {out};
}

std::vector<paddle::Tensor> GroupStackGrad(const paddle::Tensor& dout, const paddle::Tensor& features,
                                           const paddle::Tensor& feature_counts, const paddle::Tensor& idx,
                                           const paddle::Tensor& idx_counts) {
  const int64_t s = idx.shape()[1], c = features.shape()[1];
  auto grad = paddle::full(features.shape(), 0, features.type(), paddle::CPUPlace());
  const auto feature_starts = starts_of(feature_counts), idx_starts = starts_of(idx_counts);
  for (size_t b = 0; b + 1 < idx_starts.size(); ++b)
    for (int64_t i = idx_starts[b]; i < idx_starts[b + 1]; ++i)
      for (int64_t j = 0; j < c; ++j)
        for (int64_t k = 0; k < s; ++k)
          grad.data<float>()[(feature_starts[b] + idx.data<int>()[i * s + k]) * c + j] +=
              dout.data<float>()[(i * c + j) * s + k];
  return {grad};
}

PD_BUILD_OP(grouping_operation_stack)
    .Inputs({"features_tensor", "features_batch_cnt_tensor", "idx_tensor", "idx_batch_cnt_tensor"})
    .Outputs({"out_tensor"})
    .SetKernelFn(PD_KERNEL(GroupStack))
    .SetInferShapeFn(PD_INFER_SHAPE(GroupStackShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(FirstDtype4));

PD_BUILD_GRAD_OP(grouping_operation_stack)
    .Inputs({paddle::Grad("out_tensor"), "features_tensor", "features_batch_cnt_tensor", "idx_tensor",
             "idx_batch_cnt_tensor"})
    .Outputs({paddle::Grad("features_tensor")})
    .SetKernelFn(PD_KERNEL(GroupStackGrad));

// voxel_query_wrapper: the points of the voxels around each centre's voxel, in z, y, x order, within radius
std::vector<paddle::Tensor> VoxelQuery(const paddle::Tensor& centers, const paddle::Tensor& xyz,
                                       const paddle::Tensor& coords, const paddle::Tensor& grid, const float& radius,
                                       const int& nsample, const int& z_range, const int& y_range,
                                       const int& x_range) {
  const int64_t m = centers.shape()[0], gz = grid.shape()[1], gy = grid.shape()[2], gx = grid.shape()[3];
  auto idx = paddle::full({m, nsample}, 0, paddle::DataType::INT32, paddle::CPUPlace());
  const float radius2 = radius * radius;
  for (int64_t i = 0; i < m; ++i) {
    const int* c = coords.data<int>() + 4 * i;
    int* row = idx.data<int>() + i * nsample;
    int found = 0;
    for (int dz = -z_range; dz <= z_range; ++dz)
      for (int dy = -y_range; dy <= y_range; ++dy)
        for (int dx = -x_range; dx <= x_range; ++dx) {
          const int z = c[1] + dz, y = c[2] + dy, x = c[3] + dx;
          if (z < 0 || z >= gz || y < 0 || y >= gy || x < 0 || x >= gx) continue;
          const int k = grid.data<int>()[((c[0] * gz + z) * gy + y) * gx + x];
          if (k < 0 || squared(xyz.data<float>() + 3 * k, centers.data<float>() + 3 * i) > radius2) continue;
          if (found < nsample) {
            if (found == 0)
              for (int l = 0; l < nsample; ++l) row[l] = k;
            row[found++] = k;
          }
        }
    if (found == 0) row[0] = -1;
  }
  return {idx};
}

Shapes VoxelQueryShape(Shape centers, Shape, Shape, Shape, const float&, const int& nsample, const int&, const int&,
                       const int&) {
  return {{centers[0], nsample}};
}

PD_BUILD_OP(voxel_query_wrapper)
    .Inputs({"new_xyz_tensor", "xyz_tensor", "new_coords_tensor", "point_indices_tensor"})
    .Outputs({"idx_tensor"})
    .Attrs({"radius: float", "nsample: int", "z_range: int", "y_range: int", "x_range: int"})
    .SetKernelFn(PD_KERNEL(VoxelQuery))
    .SetInferShapeFn(PD_INFER_SHAPE(VoxelQueryShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(IndexDtype4));

// points_in_boxes_gpu (roiaware_pool3d): the first box holding each point, -1 for none
std::vector<paddle::Tensor> PointsInBoxes(const paddle::Tensor& points, const paddle::Tensor& boxes) {
  const int64_t b = boxes.shape()[0], m = boxes.shape()[1], n = points.shape()[1];
  auto out = paddle::full({b, n}, -1, paddle::DataType::INT32, paddle::CPUPlace());
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float* p = points.data<float>() + (i * n + j) * 3;
      for (int64_t k = 0; k < m; ++k) {
        const float* box = boxes.data<float>() + (i * m + k) * 7;
        if (std::fabs(p[2] - box[2]) > box[5] / 2.0) continue;
        const float cosa = std::cos(-box[6]), sina = std::sin(-box[6]);
        const float sx = p[0] - box[0], sy = p[1] - box[1];
        const float lx = sx * cosa + sy * (-sina), ly = sx * sina + sy * cosa;
        if (std::fabs(lx) < box[3] / 2.0 + 1e-5 && std::fabs(ly) < box[4] / 2.0 + 1e-5) {
          out.data<int>()[i * n + j] = k;
          break;
        }
      }
    }
  return {out};
}

Shapes PointsInBoxesShape(Shape points, Shape boxes) { return {{boxes[0], points[1]}}; }

PD_BUILD_OP(points_in_boxes_gpu)
    .Inputs({"pts_tensor", "boxes_tensor"})
    .Outputs({"box_idx_of_points"})
    .SetKernelFn(PD_KERNEL(PointsInBoxes))
    .SetInferShapeFn(PD_INFER_SHAPE(PointsInBoxesShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(IndexDtype2));
