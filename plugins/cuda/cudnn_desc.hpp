// cudnn_desc.hpp - owning wrappers of cuDNN descriptors. Descriptors are
// made per compute call: they are cheap, and sharing one between threads
// that set different shapes would race.
#ifndef SINGA_CUDA_CUDNN_DESC_HPP
#define SINGA_CUDA_CUDNN_DESC_HPP

#include "cuda_util.hpp"

#include <vector>

namespace singa {
namespace cuda {

template <class D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
class Descriptor {
 public:
  explicit Descriptor(const char* what) { check_cudnn(Create(&d_), what); }
  ~Descriptor() { (void)Destroy(d_); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  D get() const { return d_; }

 private:
  D d_{};
};

// A packed (row-major) float tensor of the given dims (at least 3, as cuDNN's
// Nd descriptors require).
class TensorDesc : public Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor> {
 public:
  explicit TensorDesc(const std::vector<int>& dims);
};

class FilterDesc : public Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor> {
 public:
  explicit FilterDesc(const std::vector<int>& dims);
};

using ConvDesc =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using PoolDesc = Descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;

}  // namespace cuda
}  // namespace singa

#endif
