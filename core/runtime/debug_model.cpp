#include "core/runtime/debug_model.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace gparity::runtime {
namespace {

std::string layer(std::int64_t i, const char* rest) {
  return "layers." + std::to_string(i) + "." + rest;
}

constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::uint64_t name_key(const std::string& s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a: stable across platforms and versions
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  const auto xf = x.to(at::kFloat);
  const auto normed = xf * at::rsqrt(xf.pow(2).mean({-1}, true) + eps);
  return normed.to(x.scalar_type()) * w;
}

}  // namespace

void validate(const DebugModelConfig& c) {
  const auto positive = [](std::int64_t v, const char* name) {
    if (v < 1) throw std::invalid_argument(std::string("--") + name + " must be at least 1");
  };
  positive(c.vocab, "vocab");
  positive(c.dim, "dim");
  positive(c.layers, "layers");
  positive(c.heads, "heads");
  positive(c.hidden, "hidden");
  positive(c.seq_len, "seq-len");
  positive(c.batch, "batch");
  if (c.dim % c.heads != 0) throw std::invalid_argument("--dim must be a multiple of --heads");
}

std::vector<ParamDef> debug_model_params(const DebugModelConfig& c) {
  std::vector<ParamDef> p;
  p.push_back({"tok_embeddings.weight", {c.vocab, c.dim}});
  for (std::int64_t i = 0; i < c.layers; ++i) {
    for (const char* w :
         {"attention.wq.weight", "attention.wk.weight", "attention.wv.weight", "attention.wo.weight"})
      p.push_back({layer(i, w), {c.dim, c.dim}});
    p.push_back({layer(i, "feed_forward.w1.weight"), {c.hidden, c.dim}});
    p.push_back({layer(i, "feed_forward.w2.weight"), {c.dim, c.hidden}});
    p.push_back({layer(i, "feed_forward.w3.weight"), {c.hidden, c.dim}});
    p.push_back({layer(i, "attention_norm.weight"), {c.dim}});
    p.push_back({layer(i, "ffn_norm.weight"), {c.dim}});
  }
  p.push_back({"norm.weight", {c.dim}});
  p.push_back({"output.weight", {c.vocab, c.dim}});
  return p;
}

std::vector<std::string> debug_model_execution_order(const DebugModelConfig& c) {
  std::vector<std::string> o{"tok_embeddings.weight"};
  for (std::int64_t i = 0; i < c.layers; ++i) {
    for (const char* w : {"attention_norm.weight", "attention.wq.weight", "attention.wk.weight",
                          "attention.wv.weight", "attention.wo.weight", "ffn_norm.weight",
                          "feed_forward.w1.weight", "feed_forward.w3.weight", "feed_forward.w2.weight"})
      o.push_back(layer(i, w));
  }
  o.push_back("norm.weight");
  o.push_back("output.weight");
  return o;
}

std::vector<ParamGroup> debug_model_groups(const DebugModelConfig& c) {
  const auto params = debug_model_params(c);
  std::vector<ParamGroup> groups;
  for (std::int64_t i = c.layers - 1; i >= 0; --i) {
    ParamGroup g{"layers." + std::to_string(i), {}};
    const std::string prefix = g.name + ".";
    for (const auto& p : params)
      if (p.fqn.starts_with(prefix)) g.members.push_back(p.fqn);
    groups.push_back(std::move(g));
  }
  groups.push_back({"root", {"tok_embeddings.weight", "norm.weight", "output.weight"}});
  return groups;
}

at::Tensor debug_model_init(const ParamDef& def, std::uint64_t seed) {
  if (def.shape.size() == 1) return at::ones(def.shape, at::kFloat);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(splitmix64(seed ^ name_key(def.fqn)));
  return at::normal(0.0, 0.02, def.shape, gen, at::TensorOptions().dtype(at::kFloat));
}

at::Tensor synthetic_tokens(const DebugModelConfig& c, std::uint64_t seed, int rank, std::int64_t step) {
  auto tokens = at::empty({c.batch, c.seq_len + 1}, at::kLong);
  auto* out = tokens.data_ptr<std::int64_t>();
  const std::uint64_t base = splitmix64(splitmix64(seed) ^ (static_cast<std::uint64_t>(rank) << 32) ^
                                        static_cast<std::uint64_t>(step));
  for (std::int64_t i = 0; i < tokens.numel(); ++i) {
    out[i] = static_cast<std::int64_t>(splitmix64(base + static_cast<std::uint64_t>(i)) %
                                       static_cast<std::uint64_t>(c.vocab));
  }
  return tokens;
}

at::Tensor debug_model_loss(const DebugModelConfig& c, std::span<const at::Tensor> params,
                            const at::Tensor& tokens) {
  const std::int64_t per_layer = 9;
  if (static_cast<std::int64_t>(params.size()) != 3 + per_layer * c.layers)
    throw std::invalid_argument("debug_model_loss: wrong number of parameters");
  const auto device = params[0].device();
  const auto input = tokens.narrow(1, 0, c.seq_len).to(device);
  const auto target = tokens.narrow(1, 1, c.seq_len).to(device);
  const std::int64_t B = input.size(0);
  const std::int64_t T = c.seq_len;
  const std::int64_t hd = c.dim / c.heads;
  const auto mask = at::ones({T, T}, at::TensorOptions().dtype(at::kBool).device(device)).triu(1);

  at::Tensor h = at::embedding(params[0], input);
  for (std::int64_t i = 0; i < c.layers; ++i) {
    const auto* p = params.data() + 1 + i * per_layer;
    // p: wq wk wv wo w1 w2 w3 attention_norm ffn_norm (registration order)
    const auto a = rms_norm(h, p[7], c.norm_eps);
    const auto heads = [&](const at::Tensor& w) {
      return at::linear(a, w).view({B, T, c.heads, hd}).transpose(1, 2);
    };
    const auto q = heads(p[0]);
    const auto k = heads(p[1]);
    const auto v = heads(p[2]);
    auto scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
    scores = scores.masked_fill(mask, -std::numeric_limits<double>::infinity());
    const auto probs = at::softmax(scores.to(at::kFloat), -1).to(q.scalar_type());
    const auto attn = at::matmul(probs, v).transpose(1, 2).reshape({B, T, c.dim});
    h = h + at::linear(attn, p[3]);
    const auto f = rms_norm(h, p[8], c.norm_eps);
    h = h + at::linear(at::silu(at::linear(f, p[4])) * at::linear(f, p[6]), p[5]);
  }
  const auto* tail = params.data() + 1 + c.layers * per_layer;
  const auto logits = at::linear(rms_norm(h, tail[0], c.norm_eps), tail[1]);
  return at::cross_entropy_loss(logits.reshape({-1, c.vocab}).to(at::kFloat), target.reshape({-1}));
}

}  // namespace gparity::runtime
