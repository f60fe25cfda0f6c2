// CPU kernels for the multi-scale deformable attention ops of Paddle3D (ms_deform_attn: BEVFormer) and
// PaddleDetection (ms_deformable_attn: Deformable DETR, GroundingDINO), which ship CUDA kernels only.
// The op definitions (names, slots, attributes) are the suites'; the kernels are written here from the
// formula, so tools/paddle_ext_ops.py can run the ops in Paddle on CPU. Built with paddle.utils.cpp_extension.load.
#include <cmath>
#include <vector>

#include "paddle/extension.h"

namespace {

// sample = sum over the 4 corners of (h, w) inside the level map of weight * value (zero outside)
template <typename T>
struct Sampler {
  const T* value;  // [len_in, heads, channels] of one batch
  int64_t heads, channels;

  T at(int64_t start, int64_t width, int64_t y, int64_t x, int64_t m, int64_t c) const {
    return value[((start + y * width + x) * heads + m) * channels + c];
  }
};

struct Dims {
  int64_t batch, len_in, heads, channels, levels, queries, points;
};

// loc is [N, Lq, M, L, P, 2] (x then y, in [0, 1]); attn [N, Lq, M, L, P]; value [N, len_in, M, D]
template <typename T>
void forward(const Dims& d, const T* value, const int64_t* shapes, const int64_t* starts, const T* loc,
             const T* attn, T* out) {
  for (int64_t n = 0; n < d.batch; ++n) {
    Sampler<T> s{value + n * d.len_in * d.heads * d.channels, d.heads, d.channels};
    for (int64_t q = 0; q < d.queries; ++q)
      for (int64_t m = 0; m < d.heads; ++m)
        for (int64_t c = 0; c < d.channels; ++c) {
          T acc = 0;
          for (int64_t l = 0; l < d.levels; ++l) {
            const int64_t height = shapes[2 * l], width = shapes[2 * l + 1];
            for (int64_t p = 0; p < d.points; ++p) {
              const int64_t idx = (((n * d.queries + q) * d.heads + m) * d.levels + l) * d.points + p;
              const T h = loc[2 * idx + 1] * height - T(0.5), w = loc[2 * idx] * width - T(0.5);
              if (!(h > -1 && w > -1 && h < height && w < width)) continue;
              const int64_t y0 = std::floor(h), x0 = std::floor(w);
              const T lh = h - y0, lw = w - x0;
              T v = 0;
              for (int corner = 0; corner < 4; ++corner) {
                const int64_t y = y0 + corner / 2, x = x0 + corner % 2;
                if (y < 0 || x < 0 || y >= height || x >= width) continue;
                const T wy = corner / 2 ? lh : 1 - lh, wx = corner % 2 ? lw : 1 - lw;
                v += wy * wx * s.at(starts[l], width, y, x, m, c);
              }
              acc += attn[idx] * v;
            }
          }
          out[((n * d.queries + q) * d.heads + m) * d.channels + c] = acc;
        }
  }
}

template <typename T>
void backward(const Dims& d, const T* value, const int64_t* shapes, const int64_t* starts, const T* loc,
              const T* attn, const T* dout, T* dvalue, T* dloc, T* dattn) {
  for (int64_t n = 0; n < d.batch; ++n) {
    Sampler<T> s{value + n * d.len_in * d.heads * d.channels, d.heads, d.channels};
    T* dv = dvalue + n * d.len_in * d.heads * d.channels;
    for (int64_t q = 0; q < d.queries; ++q)
      for (int64_t m = 0; m < d.heads; ++m)
        for (int64_t c = 0; c < d.channels; ++c) {
          const T g = dout[((n * d.queries + q) * d.heads + m) * d.channels + c];
          for (int64_t l = 0; l < d.levels; ++l) {
            const int64_t height = shapes[2 * l], width = shapes[2 * l + 1];
            for (int64_t p = 0; p < d.points; ++p) {
              const int64_t idx = (((n * d.queries + q) * d.heads + m) * d.levels + l) * d.points + p;
              const T h = loc[2 * idx + 1] * height - T(0.5), w = loc[2 * idx] * width - T(0.5);
              if (!(h > -1 && w > -1 && h < height && w < width)) continue;
              const int64_t y0 = std::floor(h), x0 = std::floor(w);
              const T lh = h - y0, lw = w - x0;
              T v = 0, dh = 0, dw = 0;
              for (int corner = 0; corner < 4; ++corner) {
                const int64_t y = y0 + corner / 2, x = x0 + corner % 2;
                if (y < 0 || x < 0 || y >= height || x >= width) continue;
                const T wy = corner / 2 ? lh : 1 - lh, wx = corner % 2 ? lw : 1 - lw;
                const T corner_value = s.at(starts[l], width, y, x, m, c);
                v += wy * wx * corner_value;
                dh += (corner / 2 ? 1 : -1) * wx * corner_value;
                dw += (corner % 2 ? 1 : -1) * wy * corner_value;
                dv[((starts[l] + y * width + x) * d.heads + m) * d.channels + c] += wy * wx * attn[idx] * g;
              }
              dattn[idx] += g * v;
              dloc[2 * idx] += width * dw * attn[idx] * g;
              dloc[2 * idx + 1] += height * dh * attn[idx] * g;
            }
          }
        }
  }
}

Dims dims_of(const paddle::Tensor& value, const paddle::Tensor& shapes, const paddle::Tensor& loc) {
  return {value.shape()[0], value.shape()[1], value.shape()[2], value.shape()[3],
          shapes.shape()[0], loc.shape()[1], loc.shape()[4]};
}

std::vector<paddle::Tensor> run_forward(const paddle::Tensor& value, const paddle::Tensor& shapes,
                                        const paddle::Tensor& starts, const paddle::Tensor& loc,
                                        const paddle::Tensor& attn) {
  const Dims d = dims_of(value, shapes, loc);
  auto out = paddle::full({d.batch, d.queries, d.heads * d.channels}, 0, value.type(), paddle::CPUPlace());
  PD_DISPATCH_FLOATING_TYPES(value.type(), "ms_deform_attn_cpu", ([&] {
    forward<data_t>(d, value.data<data_t>(), shapes.data<int64_t>(), starts.data<int64_t>(),
                    loc.data<data_t>(), attn.data<data_t>(), out.data<data_t>());
  }));
  return {out};
}

std::vector<paddle::Tensor> run_backward(const paddle::Tensor& value, const paddle::Tensor& shapes,
                                         const paddle::Tensor& starts, const paddle::Tensor& loc,
                                         const paddle::Tensor& attn, const paddle::Tensor& dout) {
  const Dims d = dims_of(value, shapes, loc);
  auto dvalue = paddle::full(value.shape(), 0, value.type(), paddle::CPUPlace());
  auto dloc = paddle::full(loc.shape(), 0, loc.type(), paddle::CPUPlace());
  auto dattn = paddle::full(attn.shape(), 0, attn.type(), paddle::CPUPlace());
  PD_DISPATCH_FLOATING_TYPES(value.type(), "ms_deform_attn_grad_cpu", ([&] {
    backward<data_t>(d, value.data<data_t>(), shapes.data<int64_t>(), starts.data<int64_t>(),
                     loc.data<data_t>(), attn.data<data_t>(), dout.data<data_t>(), dvalue.data<data_t>(),
                     dloc.data<data_t>(), dattn.data<data_t>());
  }));
  return {dvalue, dloc, dattn};
}

}  // namespace

// Paddle3D: slots (value, sampling_locations, attention_weights, spatial_shapes, level_start_index), im2col_step
std::vector<paddle::Tensor> Paddle3DForward(const paddle::Tensor& value, const paddle::Tensor& loc,
                                            const paddle::Tensor& attn, const paddle::Tensor& shapes,
                                            const paddle::Tensor& starts, const int im2col_step) {
  return run_forward(value, shapes, starts, loc, attn);
}

std::vector<paddle::Tensor> Paddle3DBackward(const paddle::Tensor& dout, const paddle::Tensor& value,
                                             const paddle::Tensor& loc, const paddle::Tensor& attn,
                                             const paddle::Tensor& shapes, const paddle::Tensor& starts,
                                             const int im2col_step) {
  return run_backward(value, shapes, starts, loc, attn, dout);
}

std::vector<std::vector<int64_t>> Paddle3DShape(std::vector<int64_t> value, std::vector<int64_t> loc,
                                                std::vector<int64_t> attn, std::vector<int64_t> shapes,
                                                std::vector<int64_t> starts) {
  return {{value[0], loc[1], value[2] * value[3]}};
}

std::vector<paddle::DataType> Paddle3DDtype(paddle::DataType value, paddle::DataType loc, paddle::DataType attn,
                                            paddle::DataType shapes, paddle::DataType starts) {
  return {value};
}

PD_BUILD_OP(ms_deform_attn)
    .Inputs({"value", "sampling_locations", "attention_weights", "spatial_shapes", "level_start_index"})
    .Attrs({"im2col_step: int"})
    .Outputs({"out"})
    .SetKernelFn(PD_KERNEL(Paddle3DForward))
    .SetInferShapeFn(PD_INFER_SHAPE(Paddle3DShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(Paddle3DDtype));

PD_BUILD_GRAD_OP(ms_deform_attn)
    .Inputs({paddle::Grad("out"), "value", "sampling_locations", "attention_weights", "spatial_shapes",
             "level_start_index"})
    .Attrs({"im2col_step: int"})
    .Outputs({paddle::Grad("value"), paddle::Grad("sampling_locations"), paddle::Grad("attention_weights")})
    .SetKernelFn(PD_KERNEL(Paddle3DBackward));

// PaddleDetection: slots (Value, SpatialShapes, LevelIndex, SamplingLocations, AttentionWeights), no attribute
std::vector<paddle::Tensor> DetectionForward(const paddle::Tensor& value, const paddle::Tensor& shapes,
                                             const paddle::Tensor& starts, const paddle::Tensor& loc,
                                             const paddle::Tensor& attn) {
  return run_forward(value, shapes, starts, loc, attn);
}

std::vector<paddle::Tensor> DetectionBackward(const paddle::Tensor& value, const paddle::Tensor& shapes,
                                              const paddle::Tensor& starts, const paddle::Tensor& loc,
                                              const paddle::Tensor& attn, const paddle::Tensor& dout) {
  auto grads = run_backward(value, shapes, starts, loc, attn, dout);
  // the integer inputs' grads the suite's grad op declares: zeros of their shape
  auto dshapes = paddle::full(shapes.shape(), 0, shapes.type(), paddle::CPUPlace());
  auto dstarts = paddle::full(starts.shape(), 0, starts.type(), paddle::CPUPlace());
  return {grads[0], dshapes, dstarts, grads[1], grads[2]};
}

std::vector<std::vector<int64_t>> DetectionShape(std::vector<int64_t> value, std::vector<int64_t> shapes,
                                                 std::vector<int64_t> starts, std::vector<int64_t> loc,
                                                 std::vector<int64_t> attn) {
  return {{value[0], loc[1], value[2] * value[3]}};
}

std::vector<paddle::DataType> DetectionDtype(paddle::DataType value, paddle::DataType shapes,
                                             paddle::DataType starts, paddle::DataType loc, paddle::DataType attn) {
  return {value};
}

PD_BUILD_OP(ms_deformable_attn)
    .Inputs({"Value", "SpatialShapes", "LevelIndex", "SamplingLocations", "AttentionWeights"})
    .Outputs({"Out"})
    .SetKernelFn(PD_KERNEL(DetectionForward))
    .SetInferShapeFn(PD_INFER_SHAPE(DetectionShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(DetectionDtype));

PD_BUILD_GRAD_OP(ms_deformable_attn)
    .Inputs({"Value", "SpatialShapes", "LevelIndex", "SamplingLocations", "AttentionWeights", paddle::Grad("Out")})
    .Outputs({paddle::Grad("Value"), paddle::Grad("SpatialShapes"), paddle::Grad("LevelIndex"),
              paddle::Grad("SamplingLocations"), paddle::Grad("AttentionWeights")})
    .SetKernelFn(PD_KERNEL(DetectionBackward));
