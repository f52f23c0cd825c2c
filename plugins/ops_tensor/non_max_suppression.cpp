// NonMaxSuppression (opsets 10-17): greedy per-(batch, class) box selection.
//
// Candidates above score_threshold are visited by descending score (ties keep
// the lower box index first, so results are deterministic); a candidate is kept
// unless its IoU with an already kept box exceeds iou_threshold.
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>
#include <numeric>

namespace singa {
namespace ops {
namespace tensor {
namespace {

struct Box {
  float y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
  float area() const { return (y2 - y1) * (x2 - x1); }
};

float iou(const Box& a, const Box& b) {
  const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const float iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (ih <= 0 || iw <= 0) return 0.f;
  const float inter = ih * iw, uni = a.area() + b.area() - inter;
  return uni > 0 ? inter / uni : 0.f;
}

class NonMaxSuppression : public KernelBase {
 public:
  explicit NonMaxSuppression(const Node& node) : KernelBase(node) {
    center_ = node.attr_int("center_point_box", 0);
    if (center_ != 0 && center_ != 1)
      node.fail("attribute 'center_point_box' must be 0 or 1, got " + std::to_string(center_));
  }

  void compute(Context& ctx) const {
    Tensor boxes = required(ctx, 0, "boxes"), scores = required(ctx, 1, "scores");
    check(boxes.dtype() == SINGA_ONNX_FLOAT && scores.dtype() == SINGA_ONNX_FLOAT, "boxes and scores must be float");
    SINGA_CHECK(boxes.ndim() == 3 && boxes.dim(2) == 4,
                "boxes must have shape [batch, boxes, 4], got " + shape_str(boxes.shape()));
    SINGA_CHECK(scores.ndim() == 3 && scores.dim(0) == boxes.dim(0) && scores.dim(2) == boxes.dim(1),
                "scores shape " + shape_str(scores.shape()) + " must be [batch, classes, boxes] matching boxes " +
                    shape_str(boxes.shape()));
    const int64_t max_out = ctx.has_input(2) ? read_scalar_int(ctx.input(2), "max_output_boxes_per_class") : 0;
    const float iou_thr = ctx.has_input(3) ? scalar_float(ctx.input(3), "iou_threshold") : 0.f;
    const bool has_score_thr = ctx.has_input(4);
    const float score_thr = has_score_thr ? scalar_float(ctx.input(4), "score_threshold") : 0.f;
    SINGA_CHECK(iou_thr >= 0.f && iou_thr <= 1.f, "iou_threshold must be in [0, 1], got " + std::to_string(iou_thr));

    const int64_t nb = boxes.dim(0), nbox = boxes.dim(1), ncls = scores.dim(1);
    std::vector<int64_t> selected;  // triples (batch, class, box)
    std::vector<Box> bx(size_t(nbox > 0 ? nbox : 0));
    std::vector<int64_t> order, kept;
    for (int64_t b = 0; b < nb && max_out > 0; ++b) {
      const float* pb = boxes.data<float>() + b * nbox * 4;
      for (int64_t i = 0; i < nbox; ++i) bx[size_t(i)] = to_box(pb + 4 * i);
      for (int64_t c = 0; c < ncls; ++c) {
        const float* ps = scores.data<float>() + (b * ncls + c) * nbox;
        order.clear();
        for (int64_t i = 0; i < nbox; ++i)
          if (!has_score_thr || ps[i] > score_thr) order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](int64_t l, int64_t r) { return ps[l] > ps[r]; });
        kept.clear();
        for (int64_t i : order) {
          if (int64_t(kept.size()) >= max_out) break;
          bool keep = true;
          for (int64_t k : kept)
            if (iou(bx[size_t(i)], bx[size_t(k)]) > iou_thr) {
              keep = false;
              break;
            }
          if (!keep) continue;
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
    const int64_t n = int64_t(selected.size() / 3);
    Tensor y = ctx.output(0, {n, 3}, sdk::dl_dtype(SINGA_ONNX_INT64));
    if (n) std::memcpy(y.data_ptr(), selected.data(), selected.size() * sizeof(int64_t));
  }

 private:
  Box to_box(const float* p) const {
    if (center_) {
      const float xc = p[0], yc = p[1], w = p[2], h = p[3];
      return {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
    }
    return {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
  }

  float scalar_float(const Tensor& t, const char* what) const {
    SINGA_CHECK(t.dtype() == SINGA_ONNX_FLOAT && t.numel() == 1,
                std::string("input '") + what + "' must be one float, got shape " + shape_str(t.shape()));
    return t.data<float>()[0];
  }

  int64_t center_ = 0;
};

}  // namespace

void register_non_max_suppression(sdk::Registrar& reg) {
  reg.kernel<NonMaxSuppression>("", "NonMaxSuppression", 10, 10, "cpu", {}, 0,
                                input_bit(2) | input_bit(3) | input_bit(4));
  reg.kernel<NonMaxSuppression>("", "NonMaxSuppression", 11, SINGA_VERSION_OPEN, "cpu", {}, 0,
                                input_bit(2) | input_bit(3) | input_bit(4));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
