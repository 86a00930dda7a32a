#include "core/model/base/dtype.hpp"

#include <array>

namespace gparity::model {
namespace {

struct Info {
  DType dtype;
  std::size_t size;
  std::string_view name;
  std::string_view short_name;
  std::string_view st_name;
  bool is_float;
};

constexpr std::array<Info, 16> kInfo = {{
    {DType::Bool, 1, "bool", "b8", "BOOL", false},
    {DType::U8, 1, "uint8", "u8", "U8", false},
    {DType::I8, 1, "int8", "i8", "I8", false},
    {DType::I16, 2, "int16", "i16", "I16", false},
    {DType::U16, 2, "uint16", "u16", "U16", false},
    {DType::I32, 4, "int32", "i32", "I32", false},
    {DType::U32, 4, "uint32", "u32", "U32", false},
    {DType::I64, 8, "int64", "i64", "I64", false},
    {DType::U64, 8, "uint64", "u64", "U64", false},
    {DType::F8E4M3, 1, "float8_e4m3fn", "f8e4m3fn", "F8_E4M3", true},
    {DType::F8E5M2, 1, "float8_e5m2", "f8e5m2", "F8_E5M2", true},
    {DType::F16, 2, "float16", "f16", "F16", true},
    {DType::BF16, 2, "bfloat16", "bf16", "BF16", true},
    {DType::F32, 4, "float32", "f32", "F32", true},
    {DType::F64, 8, "float64", "f64", "F64", true},
    {DType::C64, 8, "complex64", "c64", "C64", false},
}};

const Info& info(DType d) noexcept {
  return kInfo[static_cast<std::size_t>(d)];
}

struct Alias {
  std::string_view text;
  DType dtype;
};
constexpr std::array<Alias, 8> kAliases = {{
    {"float", DType::F32},
    {"double", DType::F64},
    {"half", DType::F16},
    {"long", DType::I64},
    {"int", DType::I32},
    {"short", DType::I16},
    {"cfloat", DType::C64},
    {"byte", DType::U8},
}};

}  // namespace

std::size_t dtype_size(DType d) noexcept {
  return info(d).size;
}
std::string_view dtype_name(DType d) noexcept {
  return info(d).name;
}
std::string_view dtype_short_name(DType d) noexcept {
  return info(d).short_name;
}
std::string_view dtype_safetensors_name(DType d) noexcept {
  return info(d).st_name;
}
bool dtype_is_float(DType d) noexcept {
  return info(d).is_float;
}

std::optional<DType> parse_dtype(std::string_view text) noexcept {
  if (text.starts_with("torch.")) text.remove_prefix(6);
  // Short names first: FX annotations spell every tensor's dtype so ("f32", "bf16").
  for (const Info& i : kInfo) {
    if (text == i.short_name) return i.dtype;
  }
  for (const Info& i : kInfo) {
    if (text == i.name || text == i.short_name || text == i.st_name) return i.dtype;
  }
  for (const Alias& a : kAliases) {
    if (text == a.text) return a.dtype;
  }
  return std::nullopt;
}

}  // namespace gparity::model
