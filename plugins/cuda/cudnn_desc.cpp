#include "cudnn_desc.hpp"

namespace singa {
namespace cuda {

TensorDesc::TensorDesc(const std::vector<int>& dims) : Descriptor("cudnnCreateTensorDescriptor") {
  std::vector<int> strides(dims.size());
  int64_t step = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = to_int(step, "tensor stride");
    step *= dims[i];
  }
  check_cudnn(cudnnSetTensorNdDescriptor(get(), CUDNN_DATA_FLOAT, int(dims.size()), dims.data(), strides.data()),
              "cudnnSetTensorNdDescriptor " + shape_str(Shape(dims.begin(), dims.end())));
}

FilterDesc::FilterDesc(const std::vector<int>& dims) : Descriptor("cudnnCreateFilterDescriptor") {
  check_cudnn(cudnnSetFilterNdDescriptor(get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, int(dims.size()), dims.data()),
              "cudnnSetFilterNdDescriptor " + shape_str(Shape(dims.begin(), dims.end())));
}

}  // namespace cuda
}  // namespace singa
