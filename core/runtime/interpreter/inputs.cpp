#include "core/runtime/interpreter/inputs.hpp"

#include <cstring>
#include <vector>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/safetensors.hpp"
#include "core/runtime/dtype_map.hpp"
#include "core/runtime/interpreter/detail.hpp"
#include "core/runtime/interpreter/interpreter.hpp"

namespace gparity::runtime {
namespace detail {

c10::Device parse_device(const std::string& text) {
  try {
    return c10::Device(text);
  } catch (const std::exception&) {
    throw ReplayError("invalid device \"" + text + "\"");
  }
}

}  // namespace detail

std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a64(std::string_view text) noexcept {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ull;
  }
  return h;
}

at::Tensor generate_input(std::string_view name, model::DType dtype, const std::vector<std::int64_t>& sizes,
                          const InputOptions& o) {
  const auto st = to_scalar_type(dtype);
  if (!st) throw ReplayError("cannot generate an input of dtype " + std::string(model::dtype_name(dtype)));
  std::int64_t n = 1;
  for (const auto s : sizes) n *= s;
  const std::uint64_t key = splitmix64(o.seed ^ fnv1a64(name) ^
                                       (o.per_rank ? splitmix64(static_cast<std::uint64_t>(o.rank) + 1) : 0));
  const auto x = [key](std::int64_t i) {
    return splitmix64(key + static_cast<std::uint64_t>(i + 1) * 0x9E3779B97F4A7C15ull);
  };
  if (model::dtype_is_float(dtype)) {
    auto t = at::empty(sizes, at::kFloat);
    auto* p = t.data_ptr<float>();
    for (std::int64_t i = 0; i < n; ++i)
      p[i] = static_cast<float>(static_cast<double>(x(i) >> 40) * 0x1p-23 - 1.0);
    return t.to(*st);
  }
  if (dtype == model::DType::U16 || dtype == model::DType::U32 || dtype == model::DType::U64) {
    // Few kernels take these dtypes: the values are written in place, no conversion.
    auto t = at::empty(sizes, *st);
    const auto size = model::dtype_size(dtype);
    auto* p = static_cast<unsigned char*>(t.data_ptr());
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint64_t v = 0;
      if (o.int_range) {
        const auto [lo, hi] = *o.int_range;
        v = static_cast<std::uint64_t>(lo) + x(i) % static_cast<std::uint64_t>(hi - lo);
      }
      std::memcpy(p + static_cast<std::size_t>(i) * size, &v, size);  // little-endian: the low bytes
    }
    return t;
  }
  auto t = at::zeros(sizes, at::kLong);
  if (o.int_range) {
    const auto [lo, hi] = *o.int_range;
    const auto span = static_cast<std::uint64_t>(hi - lo);
    auto* p = t.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < n; ++i) p[i] = lo + static_cast<std::int64_t>(x(i) % span);
  }
  return dtype == model::DType::Bool ? t.ne(0) : t.to(*st);
}

InputSource::InputSource(InputOptions options) : options_(std::move(options)) {
  if (!options_.safetensors.empty()) file_ = std::make_unique<model::SafetensorsFile>(options_.safetensors);
  if (options_.int_range && options_.int_range->second <= options_.int_range->first)
    throw ReplayError("--int-range LO:HI needs LO < HI");
}

InputSource::~InputSource() = default;

namespace {

const model::SafetensorsTensor* find_tensor(const model::SafetensorsFile& f, std::string_view name) {
  for (const auto& t : f.tensors())
    if (t.name == name) return &t;
  return nullptr;
}

at::Tensor load(const model::SafetensorsFile& f, const model::SafetensorsTensor& t) {
  const auto st = to_scalar_type(t.dtype);
  if (!st)
    throw ReplayError(f.path() + ": tensor \"" + t.name + "\" has dtype " +
                      std::string(model::dtype_name(t.dtype)) + ", which this LibTorch cannot hold");
  auto out = at::empty(t.shape, *st);
  const auto bytes = f.bytes(t);
  if (bytes.size() != static_cast<std::size_t>(out.nbytes()))
    throw ReplayError(f.path() + ": tensor \"" + t.name + "\" has " + std::to_string(bytes.size()) +
                      " bytes, its shape needs " + std::to_string(out.nbytes()));
  if (!bytes.empty()) std::memcpy(out.data_ptr(), bytes.data(), bytes.size());
  return out;
}

/// `values` (contiguous, CPU) laid out with `strides` on `device`.
at::Tensor place(const at::Tensor& values, const std::vector<std::int64_t>& strides,
                 const std::string& device) {
  const auto dev = detail::parse_device(device);
  if (strides.empty() || strides == values.strides().vec()) return values.to(dev).contiguous();
  auto out = at::empty_strided(values.sizes(), strides, values.options().device(dev));
  out.copy_(values);
  return out;
}

}  // namespace

std::optional<at::Tensor> InputSource::from_file(std::string_view name, const std::string& device) {
  if (!file_) return std::nullopt;
  const auto* t = find_tensor(*file_, name);
  if (!t) return std::nullopt;
  return load(*file_, *t).to(detail::parse_device(device));
}

at::Tensor InputSource::tensor(std::string_view name, const model::TensorMeta& meta,
                               const std::vector<std::int64_t>& sizes,
                               const std::vector<std::int64_t>& strides, const std::string& device,
                               const std::string& where) {
  if (file_) {
    const auto* t = find_tensor(*file_, name);
    if (!t) throw ReplayError(where + ": input \"" + std::string(name) + "\" is not in " + file_->path());
    if (t->shape != sizes || t->dtype != meta.dtype) {
      std::string want, got;
      for (const auto s : sizes) want += (want.empty() ? "" : ", ") + std::to_string(s);
      for (const auto s : t->shape) got += (got.empty() ? "" : ", ") + std::to_string(s);
      throw ReplayError(where + ": input \"" + std::string(name) + "\" in " + file_->path() + " is " +
                        std::string(model::dtype_name(t->dtype)) + "[" + got + "], the graph expects " +
                        std::string(model::dtype_name(meta.dtype)) + "[" + want + "]");
    }
    return place(load(*file_, *t), strides, device);
  }
  try {
    return place(generate_input(name, meta.dtype, sizes, options_), strides, device);
  } catch (const ReplayError& e) {
    throw ReplayError(where + ": " + e.what());
  }
}

}  // namespace gparity::runtime
