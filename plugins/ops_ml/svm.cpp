// svm.cpp - SVMClassifier and SVMRegressor in libsvm's formulation (the one
// scikit-learn's SVC/SVR fit): decision = sum_k coef_k * K(sv_k, x) + rho, with
// one-vs-one voting between classes and Platt-scaled, pairwise-coupled
// probabilities when prob_a/prob_b are given.
#include "features.hpp"
#include "post_transform.hpp"
#include "registry.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace singa {
namespace ops {
namespace ml {
namespace {

constexpr int64_t kRowGrain = 16;

class SvmKernel {
 public:
  explicit SvmKernel(const sdk::Node& node) {
    const std::string t = node.attr_string("kernel_type", "LINEAR");
    if (t == "LINEAR") type_ = kLinear;
    else if (t == "POLY") type_ = kPoly;
    else if (t == "RBF") type_ = kRbf;
    else if (t == "SIGMOID") type_ = kSigmoid;
    else node.fail("kernel_type '" + t + "' is not one of LINEAR, POLY, RBF, SIGMOID");
    const std::vector<float> p = node.attr_floats("kernel_params");
    if (!p.empty() && p.size() != 3)
      node.fail("kernel_params has " + std::to_string(p.size()) + " values, expected 3 (gamma, coef0, degree)");
    if (p.size() == 3) {
      gamma_ = p[0];
      coef0_ = p[1];
      degree_ = p[2];
    }
  }

  double operator()(const double* a, const float* b, int64_t n) const {
    if (type_ == kRbf) {
      double d = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double t = a[i] - double(b[i]);
        d += t * t;
      }
      return std::exp(-gamma_ * d);
    }
    double dot = 0;
    for (int64_t i = 0; i < n; ++i) dot += a[i] * double(b[i]);
    switch (type_) {
      case kPoly: return std::pow(gamma_ * dot + coef0_, degree_);
      case kSigmoid: return std::tanh(gamma_ * dot + coef0_);
      default: return dot;
    }
  }

 private:
  enum Type { kLinear, kPoly, kRbf, kSigmoid } type_ = kLinear;
  double gamma_ = 0, coef0_ = 0, degree_ = 0;
};

// Support vectors as a [n, cols] float matrix (attribute order), with cols
// derived from the value count.
struct SupportVectors {
  std::vector<float> v;
  int64_t n = 0, cols = 0;
  const float* row(int64_t i) const { return v.data() + i * cols; }
};

SupportVectors read_support_vectors(const sdk::Node& node, int64_t n) {
  SupportVectors s;
  s.v = node.attr_floats("support_vectors");
  s.n = n;
  if (n > 0) {
    if (s.v.empty() || s.v.size() % size_t(n) != 0)
      node.fail("support_vectors has " + std::to_string(s.v.size()) + " values, not a multiple of " +
                std::to_string(n) + " vectors");
    s.cols = int64_t(s.v.size()) / n;
  }
  return s;
}

void check_cols(const Features& f, int64_t cols) {
  if (f.cols != cols)
    sdk::fail("X has " + std::to_string(f.cols) + " features but the model's vectors have " + std::to_string(cols));
}

// Pairwise coupling of Wu, Lin and Weng (2004), method 2, as libsvm solves it:
// minimise p^T Q p subject to sum(p) = 1 by coordinate descent. r[i*k+j] is
// the estimated P(class i | class i or j).
void couple(const std::vector<double>& r, int64_t k, double* p) {
  std::vector<double> Q(size_t(k * k)), Qp(static_cast<size_t>(k));
  for (int64_t t = 0; t < k; ++t) {
    p[t] = 1.0 / double(k);
    double& qtt = Q[size_t(t * k + t)];
    qtt = 0;
    for (int64_t j = 0; j < k; ++j) {
      if (j == t) continue;
      qtt += r[size_t(j * k + t)] * r[size_t(j * k + t)];
      Q[size_t(t * k + j)] = -r[size_t(j * k + t)] * r[size_t(t * k + j)];
    }
  }
  const int64_t max_iter = std::max<int64_t>(100, k);
  const double eps = 0.005 / double(k);
  for (int64_t it = 0; it < max_iter; ++it) {
    double pQp = 0;
    for (int64_t t = 0; t < k; ++t) {
      Qp[size_t(t)] = 0;
      for (int64_t j = 0; j < k; ++j) Qp[size_t(t)] += Q[size_t(t * k + j)] * p[j];
      pQp += p[t] * Qp[size_t(t)];
    }
    double max_err = 0;
    for (int64_t t = 0; t < k; ++t) max_err = std::max(max_err, std::fabs(Qp[size_t(t)] - pQp));
    if (max_err < eps) break;
    for (int64_t t = 0; t < k; ++t) {
      const double qtt = Q[size_t(t * k + t)];
      const double diff = (-Qp[size_t(t)] + pQp) / qtt;
      p[t] += diff;
      pQp = (pQp + diff * (diff * qtt + 2 * Qp[size_t(t)])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < k; ++j) {
        Qp[size_t(j)] = (Qp[size_t(j)] + diff * Q[size_t(t * k + j)]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
}

class SvmClassifier {
 public:
  explicit SvmClassifier(const sdk::Node& node)
      : labels_(node, "classlabels_ints"),
        kernel_(node),
        post_(read_post_transform(node)),
        per_class_(node.attr_ints("vectors_per_class")),
        coef_(node.attr_floats("coefficients")),
        rho_(node.attr_floats("rho")),
        prob_a_(node.attr_floats("prob_a")),
        prob_b_(node.attr_floats("prob_b")) {
    const int64_t E = int64_t(labels_.size());
    if (per_class_.empty()) {
      // Linear mode: one coefficient row per score, no support vectors.
      rows_ = int64_t(rho_.size());
      if (rows_ == 0 || coef_.size() % size_t(rows_) != 0)
        node.fail("linear SVM: coefficients (" + std::to_string(coef_.size()) + ") must be a multiple of rho (" +
                  std::to_string(rho_.size()) + ")");
      if (rows_ != E && !(rows_ == 1 && E == 2))
        node.fail(std::to_string(rows_) + " score rows for " + std::to_string(E) + " class labels");
      sv_.v = coef_;
      sv_.n = rows_;
      sv_.cols = int64_t(coef_.size()) / rows_;
      if (!prob_a_.empty()) node.fail("prob_a needs support vectors (vectors_per_class)");
      return;
    }
    check_len(node, "vectors_per_class", per_class_.size(), size_t(E));
    int64_t n_sv = 0;
    for (int64_t c : per_class_) {
      if (c < 0) node.fail("vectors_per_class has a negative count");
      starts_.push_back(n_sv);
      n_sv += c;
    }
    sv_ = read_support_vectors(node, n_sv);
    check_len(node, "coefficients", coef_.size(), size_t((E - 1) * n_sv));
    const size_t pairs = size_t(E * (E - 1) / 2);
    check_len(node, "rho", rho_.size(), pairs);
    if (!prob_a_.empty() || !prob_b_.empty()) {
      check_len(node, "prob_a", prob_a_.size(), pairs);
      check_len(node, "prob_b", prob_b_.size(), pairs);
    }
  }

  void compute(sdk::Context& ctx) const {
    const Features f = read_features(ctx.input(0), "SVMClassifier");
    check_cols(f, sv_.cols);
    const int64_t E = int64_t(labels_.size());
    const bool svc = !per_class_.empty();
    const bool proba = svc && !prob_a_.empty();
    // Without probabilities the scores are the raw decision values.
    const int64_t width = !svc ? E : proba ? E : E * (E - 1) / 2;
    std::vector<int64_t> picked(size_t(f.rows));
    int64_t* y = picked.data();
    float* z = ctx.output(1, {f.rows, width}, SINGA_ONNX_FLOAT).data<float>();
    ctx.parallel_for(f.rows, kRowGrain, [&](int64_t b, int64_t e) {
      std::vector<double> k(static_cast<size_t>(sv_.n)), s(static_cast<size_t>(std::max(width, E * (E - 1) / 2)));
      std::vector<double> out(static_cast<size_t>(width));
      for (int64_t r = b; r < e; ++r) {
        const double* x = f.row(r);
        for (int64_t i = 0; i < sv_.n; ++i) k[size_t(i)] = kernel_(x, sv_.row(i), sv_.cols);
        y[r] = svc ? one_vs_one(k, s, out, proba) : linear(k, out);
        apply_post_transform(post_, out.data(), width);
        for (int64_t j = 0; j < width; ++j) z[r * width + j] = float(out[size_t(j)]);
      }
    });
    labels_.emit(ctx, 0, picked);
  }

 private:
  int64_t linear(const std::vector<double>& k, std::vector<double>& out) const {
    if (rows_ == 1) {
      // One row for two classes is the second class's margin; the scores are
      // [-v, v] and post_transform applies to both (as for tree margins).
      const double v = k[0] + rho_[0];
      out = {-v, v};
      return labels_[v > 0 ? 1 : 0];
    }
    for (int64_t j = 0; j < rows_; ++j) out[size_t(j)] = k[size_t(j)] + rho_[size_t(j)];
    return labels_[size_t(std::max_element(out.begin(), out.end()) - out.begin())];
  }

  // Decision value of every pair (i < j) in libsvm's order; the label is the
  // class with most votes (ties to the lower index), as libsvm predicts even
  // when it also reports probabilities.
  int64_t one_vs_one(const std::vector<double>& k, std::vector<double>& dec, std::vector<double>& out,
                     bool proba) const {
    const int64_t E = int64_t(labels_.size()), n_sv = sv_.n;
    std::vector<int64_t> votes(size_t(E), 0);
    size_t p = 0;
    for (int64_t i = 0; i < E; ++i) {
      for (int64_t j = i + 1; j < E; ++j, ++p) {
        double sum = rho_[p];
        const float* ci = coef_.data() + (j - 1) * n_sv;
        const float* cj = coef_.data() + i * n_sv;
        for (int64_t v = starts_[size_t(i)]; v < starts_[size_t(i)] + per_class_[size_t(i)]; ++v) sum += ci[v] * k[size_t(v)];
        for (int64_t v = starts_[size_t(j)]; v < starts_[size_t(j)] + per_class_[size_t(j)]; ++v) sum += cj[v] * k[size_t(v)];
        dec[p] = sum;
        ++votes[size_t(sum > 0 ? i : j)];
      }
    }
    if (!proba) {
      std::copy(dec.begin(), dec.begin() + int64_t(p), out.begin());
    } else {
      // Platt scaling turns each decision value into P(i | i or j).
      std::vector<double> pr(size_t(E * E), 0.0);
      p = 0;
      for (int64_t i = 0; i < E; ++i) {
        for (int64_t j = i + 1; j < E; ++j, ++p) {
          const double v = std::min(std::max(logistic(-(dec[p] * prob_a_[p] + prob_b_[p])), 1e-7), 1 - 1e-7);
          pr[size_t(i * E + j)] = v;
          pr[size_t(j * E + i)] = 1 - v;
        }
      }
      // Two classes go through the coupling too: its early stop (eps 0.0025)
      // leaves them a little off r01, and sklearn's libsvm reports that.
      couple(pr, E, out.data());
    }
    return labels_[size_t(std::max_element(votes.begin(), votes.end()) - votes.begin())];
  }

  ClassLabels labels_;
  SvmKernel kernel_;
  PostTransform post_;
  std::vector<int64_t> per_class_, starts_;
  std::vector<float> coef_, rho_, prob_a_, prob_b_;
  SupportVectors sv_;
  int64_t rows_ = 0;
};

class SvmRegressor {
 public:
  explicit SvmRegressor(const sdk::Node& node)
      : kernel_(node),
        post_(read_post_transform(node)),
        coef_(node.attr_floats("coefficients")),
        one_class_(node.attr_int("one_class", 0) != 0) {
    const std::vector<float> rho = node.attr_floats("rho");
    check_len(node, "rho", rho.size(), 1);
    rho_ = rho[0];
    const int64_t n = node.attr_int("n_supports", 0);
    if (n < 0) node.fail("n_supports is negative");
    if (n > 0) {
      sv_ = read_support_vectors(node, n);
      check_len(node, "coefficients", coef_.size(), size_t(n));
    } else {
      // Linear mode: the coefficients are the weight vector itself.
      if (coef_.empty()) node.fail("coefficients is empty");
      sv_.v = coef_;
      sv_.n = 1;
      sv_.cols = int64_t(coef_.size());
      coef_ = {1.0f};
    }
  }

  void compute(sdk::Context& ctx) const {
    const Features f = read_features(ctx.input(0), "SVMRegressor");
    check_cols(f, sv_.cols);
    float* y = ctx.output(0, {f.rows, 1}, SINGA_ONNX_FLOAT).data<float>();
    ctx.parallel_for(f.rows, kRowGrain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        double s = rho_;
        for (int64_t i = 0; i < sv_.n; ++i) s += double(coef_[size_t(i)]) * kernel_(f.row(r), sv_.row(i), sv_.cols);
        if (one_class_) s = s > 0 ? 1.0 : -1.0;
        apply_post_transform(post_, &s, 1);
        y[r] = float(s);
      }
    });
  }

 private:
  SvmKernel kernel_;
  PostTransform post_;
  std::vector<float> coef_;
  double rho_ = 0;
  bool one_class_;
  SupportVectors sv_;
};

}  // namespace

void register_svm(sdk::Registrar& reg) {
  reg.kernel<SvmClassifier>(kDomain, "SVMClassifier", 1, kLastOpset, "cpu", {{"T", 0, kFeatureTypes}});
  reg.kernel<SvmRegressor>(kDomain, "SVMRegressor", 1, kLastOpset, "cpu", {{"T", 0, kFeatureTypes}});
}

}  // namespace ml
}  // namespace ops
}  // namespace singa
