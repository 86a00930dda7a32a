// prims ops that only Python registers (python_prims.hpp).

#include "core/runtime/interpreter/python_prims.hpp"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <memory>

namespace gparity::runtime {
namespace {

// torch._prims._convert_element_type_aten: an empty_like in the new dtype (dense strides kept),
// then a copy.
at::Tensor convert_element_type(const at::Tensor& a, at::ScalarType dtype) {
  return at::empty_like(a, a.options().dtype(dtype)).copy_(a);
}

// torch._prims._iota_aten: arange(start, start + length * step, step).
at::Tensor iota(std::int64_t length, std::int64_t start, std::int64_t step, at::ScalarType dtype,
                c10::Device device, bool requires_grad) {
  return at::arange(start, start + length * step, step,
                    at::TensorOptions().dtype(dtype).device(device).requires_grad(requires_grad));
}

bool registered(const char* name) {
  return c10::Dispatcher::singleton().findSchema({name, ""}).has_value();
}

}  // namespace

void register_python_prims() {
  // The library object must outlive every call to its ops: a function-local static, made once.
  static const auto lib = [] {
    auto l =
        std::make_unique<torch::Library>(torch::Library::FRAGMENT, "prims", c10::nullopt, __FILE__, __LINE__);
    if (!registered("prims::convert_element_type"))
      l->def("convert_element_type(Tensor a, ScalarType dtype) -> Tensor", &convert_element_type);
    if (!registered("prims::iota"))
      l->def(
          "iota(int length, *, int start, int step, ScalarType dtype, Device device, bool requires_grad) -> "
          "Tensor",
          &iota);
    return l;
  }();
  (void)lib;
}

}  // namespace gparity::runtime
