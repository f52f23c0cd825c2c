#include <singa/error.hpp>
#include <singa/optim.hpp>

#include <cmath>
#include <cstring>

namespace singa {
namespace optim {

Optimizer::Optimizer(NamedVariables params, double lr) : params_(std::move(params)), lr_(lr) {
  if (!(lr >= 0)) throw Error(SINGA_INVALID_ARGUMENT, "optimizer: learning rate must not be negative");
  for (const auto& p : params_)
    if (!p.second.defined()) throw Error(SINGA_INVALID_ARGUMENT, "optimizer: parameter '" + p.first + "' is undefined");
  slots_.resize(params_.size());
}

void Optimizer::zero_grad() {
  for (auto& p : params_) p.second.zero_grad();
}

void Optimizer::step() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Variable& v = params_[i].second;
    if (!v.requires_grad() || !v.grad().defined()) continue;
    Tensor p = v.data();
    const int32_t t = p.dtype();
    if ((t != SINGA_ONNX_FLOAT && t != SINGA_ONNX_DOUBLE) || v.grad().dtype() != t || v.grad().numel() != p.numel())
      throw Error(SINGA_INVALID_ARGUMENT, "optimizer: parameter '" + params_[i].first + "' (" + dtype_name(t) + " " +
                                              shape_to_string(p.shape()) + ") has no usable float gradient");
    auto& slots = slots_[i];
    while (slots.size() < num_slots()) slots.push_back(Tensor::zeros(p.shape(), t));
    update(p, v.grad(), slots);
  }
  ++steps_;
}

std::map<std::string, Tensor> Optimizer::state() const {
  std::map<std::string, Tensor> s;
  for (size_t i = 0; i < params_.size(); ++i)
    for (size_t k = 0; k < slots_[i].size(); ++k) s[params_[i].first + "/slot" + std::to_string(k)] = slots_[i][k];
  s["steps"] = autograd::scalar(double(steps_), SINGA_ONNX_INT64);
  s["lr"] = autograd::scalar(lr_, SINGA_ONNX_DOUBLE);
  return s;
}

void Optimizer::load_state(const std::map<std::string, Tensor>& s) {
  for (size_t i = 0; i < params_.size(); ++i) {
    slots_[i].clear();
    for (size_t k = 0; k < num_slots(); ++k) {
      auto it = s.find(params_[i].first + "/slot" + std::to_string(k));
      if (it == s.end()) break;
      if (it->second.shape() != params_[i].second.shape() || it->second.dtype() != params_[i].second.dtype())
        throw Error(SINGA_INVALID_ARGUMENT, "optimizer state for '" + params_[i].first + "' does not match the parameter");
      slots_[i].push_back(it->second.clone());
    }
  }
  auto st = s.find("steps");
  if (st != s.end() && st->second.dtype() == SINGA_ONNX_INT64) steps_ = *st->second.data<int64_t>();
  auto lr = s.find("lr");
  if (lr != s.end() && lr->second.dtype() == SINGA_ONNX_DOUBLE) lr_ = *lr->second.data<double>();
}

namespace {
template <class F>
void for_float(const Tensor& p, F&& f) {
  if (p.dtype() == SINGA_ONNX_FLOAT)
    f(float{});
  else
    f(double{});
}
}  // namespace

SGD::SGD(NamedVariables params, double lr, double momentum, double weight_decay, bool nesterov, double dampening)
    : Optimizer(std::move(params), lr), momentum_(momentum), weight_decay_(weight_decay), dampening_(dampening),
      nesterov_(nesterov) {
  if (momentum < 0 || weight_decay < 0) throw Error(SINGA_INVALID_ARGUMENT, "SGD: momentum and weight decay must not be negative");
  if (nesterov && (momentum <= 0 || dampening != 0))
    throw Error(SINGA_INVALID_ARGUMENT, "SGD: Nesterov momentum needs momentum > 0 and no dampening");
}

void SGD::update(Tensor& pt, const Tensor& gt, std::vector<Tensor>& slots) {
  for_float(pt, [&](auto tag) {
    using T = decltype(tag);
    // Parameter, gradient and momentum are separate buffers; saying so, and
    // hoisting the per-step choices out of the loop, lets it vectorise.
    T* __restrict p = pt.data<T>();
    const T* __restrict g = gt.data<T>();
    T* __restrict v = slots.empty() ? nullptr : slots[0].data<T>();
    const T lr = T(lr_), wd = T(weight_decay_), mu = T(momentum_), damp = T(1 - dampening_);
    const bool first = steps_ == 0;  // v starts as the first step's d
    const int64_t n = pt.numel();
    if (!v) {
      for (int64_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
    } else if (first) {
      for (int64_t i = 0; i < n; ++i) {
        const T d = g[i] + wd * p[i];
        v[i] = d;
        p[i] -= lr * (nesterov_ ? d + mu * d : d);
      }
    } else if (nesterov_) {
      for (int64_t i = 0; i < n; ++i) {
        const T d = g[i] + wd * p[i];
        v[i] = mu * v[i] + damp * d;
        p[i] -= lr * (d + mu * v[i]);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        v[i] = mu * v[i] + damp * (g[i] + wd * p[i]);
        p[i] -= lr * v[i];
      }
    }
  });
}

Adam::Adam(NamedVariables params, double lr, double beta1, double beta2, double epsilon, double weight_decay, bool decoupled)
    : Optimizer(std::move(params), lr), b1_(beta1), b2_(beta2), eps_(epsilon), wd_(weight_decay), decoupled_(decoupled) {
  if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 && epsilon > 0 && weight_decay >= 0))
    throw Error(SINGA_INVALID_ARGUMENT, "Adam: betas must be in [0, 1), epsilon positive, weight decay not negative");
}

void Adam::update(Tensor& pt, const Tensor& gt, std::vector<Tensor>& slots) {
  const double t = double(steps_ + 1);
  const double c1 = 1 - std::pow(b1_, t), c2 = 1 - std::pow(b2_, t);
  for_float(pt, [&](auto tag) {
    using T = decltype(tag);
    T* p = pt.data<T>();
    const T* g = gt.data<T>();
    T *m = slots[0].data<T>(), *v = slots[1].data<T>();
    const T lr = T(lr_), b1 = T(b1_), b2 = T(b2_), eps = T(eps_), wd = T(wd_);
    const T step = T(lr_ / c1), root_c2 = T(std::sqrt(c2));
    const int64_t n = pt.numel();
    for (int64_t i = 0; i < n; ++i) {
      T d = g[i];
      if (decoupled_)
        p[i] -= lr * wd * p[i];
      else
        d += wd * p[i];
      m[i] = b1 * m[i] + (T(1) - b1) * d;
      v[i] = b2 * v[i] + (T(1) - b2) * d * d;
      p[i] -= step * m[i] / (std::sqrt(v[i]) / root_c2 + eps);
    }
  });
}

double StepLR::at(int64_t epoch) const { return base_ * std::pow(gamma_, double(epoch / std::max<int64_t>(1, step_))); }

double CosineLR::at(int64_t epoch) const {
  const double pi = 3.14159265358979323846;
  double t = std::min<double>(double(epoch), double(total_));
  return min_ + (base_ - min_) * (1 + std::cos(pi * t / double(std::max<int64_t>(1, total_)))) / 2;
}

}  // namespace optim
}  // namespace singa
