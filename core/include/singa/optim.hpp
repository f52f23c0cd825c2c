// optim.hpp - optimizers that update Variables from their gradients, and
// learning-rate schedules.
#ifndef SINGA_OPTIM_HPP
#define SINGA_OPTIM_HPP

#include <singa/autograd.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace singa {
namespace optim {

using autograd::Variable;
using NamedVariables = std::vector<std::pair<std::string, Variable>>;

class Optimizer {
 public:
  Optimizer(NamedVariables params, double lr);
  virtual ~Optimizer() = default;
  // Updates every parameter that has a gradient (in place), then counts a step.
  void step();
  // Forgets the gradients (before the next backward()).
  void zero_grad();
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  int64_t steps() const { return steps_; }
  const NamedVariables& params() const { return params_; }
  // Per-parameter state (momentum buffers, moments) and the step count, by
  // name, for checkpoints.
  std::map<std::string, Tensor> state() const;
  void load_state(const std::map<std::string, Tensor>& state);

 protected:
  // Updates one float32/float64 parameter; `slots` are this parameter's
  // state tensors (created zeroed with its shape on first use).
  virtual void update(Tensor& param, const Tensor& grad, std::vector<Tensor>& slots) = 0;
  virtual size_t num_slots() const = 0;
  NamedVariables params_;
  std::vector<std::vector<Tensor>> slots_;
  double lr_;
  int64_t steps_ = 0;
};

// SGD with momentum (PyTorch's form: v = mu v + (1 - dampening) g;
// p -= lr v, or lr (g + mu v) with Nesterov) and L2 weight decay.
class SGD : public Optimizer {
 public:
  SGD(NamedVariables params, double lr, double momentum = 0, double weight_decay = 0, bool nesterov = false,
      double dampening = 0);

 protected:
  void update(Tensor& p, const Tensor& g, std::vector<Tensor>& slots) override;
  size_t num_slots() const override { return momentum_ != 0 ? 1 : 0; }

 private:
  double momentum_, weight_decay_, dampening_;
  bool nesterov_;
};

// Adam (weight decay added to the gradient, L2) and AdamW (decoupled decay).
class Adam : public Optimizer {
 public:
  Adam(NamedVariables params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double epsilon = 1e-8,
       double weight_decay = 0, bool decoupled = false);

 protected:
  void update(Tensor& p, const Tensor& g, std::vector<Tensor>& slots) override;
  size_t num_slots() const override { return 2; }

 private:
  double b1_, b2_, eps_, wd_;
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  AdamW(NamedVariables params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double epsilon = 1e-8,
        double weight_decay = 0.01)
      : Adam(std::move(params), lr, beta1, beta2, epsilon, weight_decay, true) {}
};

// Learning rate as a function of the epoch (0-based).
class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual double at(int64_t epoch) const = 0;
};
// base * gamma^(epoch / step)
class StepLR : public Schedule {
 public:
  StepLR(double base, int64_t step, double gamma = 0.1) : base_(base), step_(step), gamma_(gamma) {}
  double at(int64_t epoch) const override;

 private:
  double base_;
  int64_t step_;
  double gamma_;
};
// Cosine annealing from base to min over `total` epochs.
class CosineLR : public Schedule {
 public:
  CosineLR(double base, int64_t total, double min = 0) : base_(base), total_(total), min_(min) {}
  double at(int64_t epoch) const override;

 private:
  double base_;
  int64_t total_;
  double min_;
};

}  // namespace optim
}  // namespace singa
#endif
