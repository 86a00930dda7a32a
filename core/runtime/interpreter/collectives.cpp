// Functional collectives on c10d (collectives.hpp).

#include "core/runtime/interpreter/collectives.hpp"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <sstream>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "core/runtime/gpu_share.hpp"
#include "core/runtime/interpreter/detail.hpp"
#include "core/runtime/interpreter/interpreter.hpp"

#if GPARITY_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if GPARITY_HAVE_NCCL
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace gparity::runtime {

struct GroupComm::Impl {
  RankEnv env;
  CommBackend backend;
  GroupRanks groups;
  std::vector<int> gpu_of_rank;  // empty: a GPU per rank
  std::chrono::milliseconds timeout;
  bool capturing = false;       // inside a CUDA graph capture: wait without a host-side timeout
  std::unique_ptr<Comm> world;  // rendezvous, heartbeat, failure diagnosis
  c10::intrusive_ptr<c10d::Store> store;
  struct Group {
    std::vector<int> ranks;
    int my = -1;
#if GPARITY_HAVE_GLOO
    c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#endif
#if GPARITY_HAVE_NCCL
    c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif
  };
  std::map<std::string, Group> made;

  Group& group(const std::string& key, const std::vector<int>& ranks) {
    if (auto it = made.find(key); it != made.end()) return it->second;
    Group g;
    g.ranks = ranks;
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == env.rank) g.my = static_cast<int>(i);
    for (const auto r : ranks)
      if (r >= env.world_size)
        throw ReplayError("process group \"" + key + "\" names rank " + std::to_string(r) +
                          ", but the run has " + std::to_string(env.world_size) + " ranks");
    if (g.my < 0)
      throw ReplayError("this rank (" + std::to_string(env.rank) + ") is not in process group \"" + key +
                        "\"");
    if (backend == CommBackend::Nccl && !gpu_of_rank.empty()) {
      if (const auto why = gpu_share_conflict(ranks, gpu_of_rank); !why.empty())
        throw ReplayError("process group \"" + key + "\" cannot run here: " + why);
    }
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("gparity/replay/pg/" + key, store);
    const int n = static_cast<int>(ranks.size());
#if GPARITY_HAVE_NCCL
    if (backend == CommBackend::Nccl) {
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout;
      g.nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, g.my, n, opts);
    }
#endif
#if GPARITY_HAVE_GLOO
    if (backend == CommBackend::Gloo) {
      auto opts = c10d::ProcessGroupGloo::Options::create();
      opts->timeout = timeout;
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(
          env.master_addr == "localhost" ? std::string("127.0.0.1") : env.master_addr));
      g.gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, g.my, n, opts);
    }
#endif
    return made.emplace(key, std::move(g)).first->second;
  }
};

GroupComm::GroupComm(const RankEnv& env, CommBackend backend, GroupRanks groups,
                     std::chrono::milliseconds timeout, std::vector<int> gpu_of_rank)
    : impl_(std::make_unique<Impl>()) {
  impl_->env = env;
  impl_->backend = backend;
  impl_->groups = std::move(groups);
  impl_->gpu_of_rank = std::move(gpu_of_rank);
  impl_->timeout = timeout;
#if GPARITY_HAVE_NCCL
  // NCCL communicators bind to the current device: this rank's GPU, as the inputs are placed.
  if (backend == CommBackend::Nccl) c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.local_rank));
#endif
  impl_->world = std::make_unique<Comm>(env, backend, timeout);
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(env.master_port);
  o.isServer = false;
  o.waitWorkers = false;
  o.timeout = timeout;
  impl_->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
}

GroupComm::~GroupComm() {
  impl_->made.clear();
}

int GroupComm::rank() const noexcept {
  return impl_->env.rank;
}
int GroupComm::world_size() const noexcept {
  return impl_->env.world_size;
}
const GroupRanks& GroupComm::groups() const noexcept {
  return impl_->groups;
}
void GroupComm::set_graph_capture(bool capturing) noexcept {
  impl_->capturing = capturing;
}
void GroupComm::barrier(const char* what) {
  impl_->world->store_barrier(what);
}

std::vector<std::string> GroupComm::all_gather_text(const std::string& key, const std::string& text) {
  const std::string prefix = "gparity/replay/exchange/" + key + "/";
  try {
    impl_->store->set(prefix + std::to_string(impl_->env.rank),
                      std::vector<std::uint8_t>(text.begin(), text.end()));
    std::vector<std::string> out;
    for (int r = 0; r < impl_->env.world_size; ++r) {
      const auto bytes = impl_->store->get(prefix + std::to_string(r));
      out.emplace_back(bytes.begin(), bytes.end());
    }
    return out;
  } catch (const std::exception& e) {
    throw RankFailure("exchange \"" + key + "\" between ranks failed (a rank stopped?): " + e.what());
  }
}

struct CollectiveResults::Impl {
  struct Entry {
    std::string signature;
    c10::IValue value;
  };
  std::map<std::pair<std::string, std::int64_t>, Entry> kept;
  std::map<std::string, std::int64_t> next;  // per group: the sequence number of the next collective
};

CollectiveResults::CollectiveResults() : impl_(std::make_unique<Impl>()) {}
CollectiveResults::~CollectiveResults() = default;
std::size_t CollectiveResults::size() const noexcept {
  return impl_->kept.size();
}

namespace detail {
namespace {

const std::map<std::string, std::vector<std::string>, std::less<>>& new_params() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> m = {
      {"all_reduce", {"input", "reduce_op", "group_name"}},
      {"all_reduce_", {"input", "reduce_op", "group_name"}},
      {"all_reduce_coalesced", {"inputs", "reduce_op", "group_name"}},
      {"all_reduce_coalesced_", {"inputs", "reduce_op", "group_name"}},
      {"all_gather_into_tensor", {"input", "group_size", "group_name"}},
      {"all_gather_into_tensor_out", {"input", "group_size", "group_name", "out"}},
      {"all_gather_into_tensor_coalesced", {"inputs", "group_size", "group_name"}},
      {"reduce_scatter_tensor", {"input", "reduce_op", "group_size", "group_name"}},
      {"reduce_scatter_tensor_coalesced", {"inputs", "reduce_op", "group_size", "group_name"}},
      {"all_to_all_single", {"input", "output_split_sizes", "input_split_sizes", "group_name"}},
      {"broadcast", {"input", "src", "group_name"}},
      {"broadcast_", {"input", "src", "group_name"}},
      {"wait_tensor", {"tensor"}},
  };
  return m;
}

const std::map<std::string, std::vector<std::string>, std::less<>>& legacy_params() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> m = {
      {"all_reduce", {"self", "reduceOp", "tag", "ranks", "group_size"}},
      {"all_reduce_coalesced", {"self", "reduceOp", "tag", "ranks", "group_size"}},
      {"all_gather_into_tensor", {"shard", "tag", "ranks", "group_size"}},
      {"all_gather_into_tensor_coalesced", {"input", "tag", "ranks", "group_size"}},
      {"reduce_scatter_tensor", {"input", "reduceOp", "tag", "ranks", "group_size"}},
      {"reduce_scatter_tensor_coalesced", {"input", "reduceOp", "tag", "ranks", "group_size"}},
      {"all_to_all_single",
       {"input", "output_split_sizes", "input_split_sizes", "tag", "ranks", "group_size"}},
      {"wait_tensor", {"self"}},
  };
  return m;
}

c10d::ReduceOp reduce_op(const std::string& name) {
  if (name == "sum") return c10d::ReduceOp::SUM;
  if (name == "avg") return c10d::ReduceOp::AVG;
  if (name == "product") return c10d::ReduceOp::PRODUCT;
  if (name == "min") return c10d::ReduceOp::MIN;
  if (name == "max") return c10d::ReduceOp::MAX;
  throw ReplayError("unknown reduce op \"" + name + "\"");
}

/// Where the collective runs: the group's ranks, and the group when more than one rank.
struct Target {
  std::string key;
  std::vector<int> ranks;
  GroupComm::Impl::Group* group = nullptr;  // null: a one-rank group, computed locally
};

Target resolve(GroupComm* comm, bool legacy, const std::vector<std::string>& names,
               std::vector<c10::IValue>& args) {
  const auto at = [&](const char* n) -> c10::IValue& {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == n) return args[i];
    throw ReplayError(std::string("internal: no parameter ") + n);
  };
  Target t;
  if (legacy) {
    for (const auto& r : at("ranks").toIntVector()) t.ranks.push_back(static_cast<int>(r));
    for (const auto r : t.ranks) t.key += (t.key.empty() ? "ranks:" : ",") + std::to_string(r);
  } else {
    const auto& name = at("group_name");
    if (!name.isString()) throw ReplayError("group_name is not a string");
    t.key = name.toStringRef();
    const GroupRanks empty;
    const auto& known = comm ? comm->groups() : empty;
    if (const auto it = known.find(t.key); it != known.end()) {
      t.ranks = it->second;
    } else {
      std::int64_t size = -1;
      for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == "group_size" && args[i].isInt()) size = args[i].toInt();
      if (size == 1 || (!comm && size == -1)) {
        t.ranks = {comm ? comm->rank() : 0};
      } else {
        std::string list;
        for (const auto& [k, v] : known) list += (list.empty() ? "" : ", ") + k;
        throw ReplayError("unknown process group \"" + t.key +
                          "\" (known: " + (list.empty() ? "none" : list) + "; name its ranks with --group " +
                          t.key + "=RANK,RANK,... or give a Flight Recorder dump)");
      }
    }
  }
  if (t.ranks.size() > 1) {
    if (!comm)
      throw ReplayError("process group \"" + t.key + "\" has " + std::to_string(t.ranks.size()) +
                        " ranks; replay with --nproc " + std::to_string(t.ranks.size()) + " or more");
    t.group = &comm->impl().group(t.key, t.ranks);
  }
  return t;
}

void wait(const c10::intrusive_ptr<c10d::Work>& w, GroupComm* comm) {
  wait_work(w, comm->impl().capturing, comm->impl().timeout);
}

/// Bytes moved as bytes: Gloo in LibTorch 1.13 knows no bfloat16; the leading dims stay.
at::Tensor as_bytes(const at::Tensor& t) {
  return t.contiguous().unsqueeze(-1).view(at::kByte);
}

at::Tensor all_reduce(Target& t, GroupComm* comm, at::Tensor x, const std::string& op) {
  if (!t.group) return x;
  auto& g = *t.group;
  c10d::AllreduceOptions o;
  o.reduceOp = reduce_op(op);
#if GPARITY_HAVE_NCCL
  if (g.nccl) {
    std::vector<at::Tensor> ts{x};
    wait(g.nccl->allreduce(ts, o), comm);
    return x;
  }
#endif
#if GPARITY_HAVE_GLOO
  // Gloo has neither avg nor bfloat16: sum (in float32 for bf16), divide, round once.
  const bool avg = op == "avg";
  if (avg) o.reduceOp = c10d::ReduceOp::SUM;
  std::vector<at::Tensor> ts{x.scalar_type() == at::kBFloat16 ? x.to(at::kFloat) : x};
  wait(g.gloo->allreduce(ts, o), comm);
  if (avg) ts[0].div_(static_cast<double>(t.ranks.size()));
  if (!ts[0].is_same(x)) x.copy_(ts[0]);
#endif
  (void)g;
  return x;
}

at::Tensor all_gather(Target& t, GroupComm* comm, const at::Tensor& in) {
  const auto n = static_cast<std::int64_t>(t.ranks.size());
  auto sizes = in.sizes().vec();
  if (sizes.empty()) sizes.push_back(1);
  sizes[0] *= n;
  auto out = at::empty(sizes, in.options());
  if (!t.group) return out.copy_(in.reshape(sizes));
  auto& g = *t.group;
#if GPARITY_HAVE_NCCL
  if (g.nccl) {
    auto i = in.contiguous();
    wait(g.nccl->_allgather_base(out, i), comm);
    return out;
  }
#endif
#if GPARITY_HAVE_GLOO
  const auto src = as_bytes(in.reshape({in.numel() == 0 ? 0 : in.numel()}));
  auto dst = as_bytes(out.view({out.numel()}));
  const auto m = src.size(0);
  std::vector<at::Tensor> outs;
  for (std::int64_t r = 0; r < n; ++r) outs.push_back(dst.narrow(0, r * m, m));
  std::vector<std::vector<at::Tensor>> outputs{outs};
  std::vector<at::Tensor> inputs{src};
  wait(g.gloo->allgather(outputs, inputs), comm);
  for (std::int64_t r = 0; r < n; ++r) dst.narrow(0, r * m, m).copy_(outputs[0][static_cast<std::size_t>(r)]);
#endif
  (void)g;
  return out;
}

at::Tensor reduce_scatter(Target& t, GroupComm* comm, const at::Tensor& in, const std::string& op) {
  const auto n = static_cast<std::int64_t>(t.ranks.size());
  if (in.dim() == 0 || in.size(0) % n != 0)
    throw ReplayError("reduce_scatter_tensor: dim 0 of the input is not divisible by the group size " +
                      std::to_string(n));
  if (!t.group) return in.clone();
  auto& g = *t.group;
  auto sizes = in.sizes().vec();
  sizes[0] /= n;
#if GPARITY_HAVE_NCCL
  if (g.nccl) {
    auto out = at::empty(sizes, in.options());
    auto i = in.contiguous();
    c10d::ReduceScatterOptions o;
    o.reduceOp = reduce_op(op);
    wait(g.nccl->_reduce_scatter_base(out, i, o), comm);
    return out;
  }
#endif
  // Gloo in 1.13 has no reduce-scatter: all-reduce and keep this rank's slot (the same sums).
  auto all = all_reduce(t, comm, in.clone(), op);
  (void)g;
  return all.narrow(0, g.my * sizes[0], sizes[0]).clone();
}

at::Tensor all_to_all(Target& t, GroupComm* comm, const at::Tensor& in, std::vector<std::int64_t> out_splits,
                      std::vector<std::int64_t> in_splits) {
  auto sizes = in.sizes().vec();
  if (sizes.empty()) throw ReplayError("all_to_all_single needs a tensor with at least one dim");
  if (!out_splits.empty()) {
    sizes[0] = 0;
    for (const auto s : out_splits) sizes[0] += s;
  }
  if (!t.group) return in.clone().reshape(sizes);
  auto& g = *t.group;
  auto out = at::empty(sizes, in.options());
  auto i = in.contiguous();
#if GPARITY_HAVE_NCCL
  if (g.nccl) {
    wait(g.nccl->alltoall_base(out, i, out_splits, in_splits), comm);
    return out;
  }
#endif
#if GPARITY_HAVE_GLOO
  auto ib = as_bytes(i);
  auto ob = as_bytes(out);
  wait(g.gloo->alltoall_base(ob, ib, out_splits, in_splits), comm);
  out.copy_(ob.view(out.scalar_type()).squeeze(-1).view(sizes));
#endif
  (void)g;
  return out;
}

at::Tensor broadcast(Target& t, GroupComm* comm, at::Tensor x, std::int64_t src) {
  if (!t.group) return x;
  auto& g = *t.group;
  c10d::BroadcastOptions o;
  o.rootRank = src;
  std::vector<at::Tensor> ts;
#if GPARITY_HAVE_NCCL
  if (g.nccl) {
    ts = {x};
    wait(g.nccl->broadcast(ts, o), comm);
    return x;
  }
#endif
#if GPARITY_HAVE_GLOO
  ts = {as_bytes(x)};
  wait(g.gloo->broadcast(ts, o), comm);
  x.copy_(ts[0].view(x.scalar_type()).squeeze(-1).view(x.sizes()));
#endif
  (void)g;
  return x;
}

std::vector<at::Tensor> tensors_of(const c10::IValue& v) {
  if (v.isTensorList()) return v.toTensorVector();
  std::vector<at::Tensor> out;
  if (v.isList()) {
    for (const auto& e : v.toListRef()) out.push_back(e.toTensor());
    return out;
  }
  if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) out.push_back(e.toTensor());
    return out;
  }
  return {v.toTensor()};
}

}  // namespace

const std::vector<std::string>* collective_params(std::string_view op, bool legacy) {
  const auto& m = legacy ? legacy_params() : new_params();
  const auto it = m.find(op);
  return it == m.end() ? nullptr : &it->second;
}

namespace {

c10::IValue collective(GroupComm* comm, std::string_view op, bool legacy, std::vector<c10::IValue>& args) {
  const auto& names = *collective_params(op, legacy);
  const auto at = [&](const char* n) -> c10::IValue& {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == n) return args[i];
    throw ReplayError(std::string("internal: no parameter ") + n);
  };
  const auto tensor = [&](const c10::IValue& v, const char* what) {
    if (!v.isTensor()) throw ReplayError(std::string(what) + " is not a tensor");
    return v.toTensor();
  };
  if (op == "wait_tensor") return args[0];  // collectives here complete before they return
  auto t = resolve(comm, legacy, names, args);
  const char* reduce_name = legacy ? "reduceOp" : "reduce_op";
  if (op == "all_reduce")
    return all_reduce(t, comm, tensor(args[0], "input").clone(), at(reduce_name).toStringRef());
  if (op == "all_reduce_")
    return all_reduce(t, comm, tensor(args[0], "input"), at(reduce_name).toStringRef());
  if (op == "all_reduce_coalesced" || op == "all_reduce_coalesced_") {
    c10::List<at::Tensor> out;
    for (auto& x : tensors_of(args[0]))
      out.push_back(all_reduce(t, comm, op.back() == '_' ? x : x.clone(), at(reduce_name).toStringRef()));
    return out;
  }
  if (op == "all_gather_into_tensor") return all_gather(t, comm, tensor(args[0], "input"));
  if (op == "all_gather_into_tensor_out") {
    auto out = tensor(at("out"), "out");
    return out.copy_(all_gather(t, comm, tensor(args[0], "input")));
  }
  if (op == "all_gather_into_tensor_coalesced") {
    c10::List<at::Tensor> out;
    for (auto& x : tensors_of(args[0])) out.push_back(all_gather(t, comm, x));
    return out;
  }
  if (op == "reduce_scatter_tensor")
    return reduce_scatter(t, comm, tensor(args[0], "input"), at(reduce_name).toStringRef());
  if (op == "reduce_scatter_tensor_coalesced") {
    c10::List<at::Tensor> out;
    for (auto& x : tensors_of(args[0]))
      out.push_back(reduce_scatter(t, comm, x, at(reduce_name).toStringRef()));
    return out;
  }
  if (op == "all_to_all_single") {
    const auto splits = [](const c10::IValue& v) {
      return v.isNone() ? std::vector<std::int64_t>{} : v.toIntVector();
    };
    return all_to_all(t, comm, tensor(args[0], "input"), splits(at("output_split_sizes")),
                      splits(at("input_split_sizes")));
  }
  if (op == "broadcast") return broadcast(t, comm, tensor(args[0], "input").clone(), at("src").toInt());
  if (op == "broadcast_") return broadcast(t, comm, tensor(args[0], "input"), at("src").toInt());
  throw ReplayError("functional collective " + std::string(op) + " is not implemented");
}

}  // namespace

c10::IValue run_collective(GroupComm* comm, std::string_view op, bool legacy,
                           std::vector<c10::IValue>& args) {
  if (op == "wait_tensor") return args[0];
  // c10d's worker threads run outside the replay's inference mode and may only write normal
  // tensors: the collective runs outside it, in-place forms on a normal copy written back here.
  const bool in_place = op.ends_with('_') || op == "all_gather_into_tensor_out";
  const std::size_t target = op == "all_gather_into_tensor_out" ? args.size() - 1 : 0;
  const c10::IValue original = in_place ? args[target] : c10::IValue();
  c10::IValue result;
  {
    const c10::InferenceMode normal(false);
    if (in_place) {
      if (original.isTensor()) {
        args[target] = original.toTensor().clone();
      } else if (original.isList()) {
        c10::List<at::Tensor> copies;
        for (const auto& x : tensors_of(original)) copies.push_back(x.clone());
        args[target] = copies;
      }
    }
    result = collective(comm, op, legacy, args);
  }
  if (!in_place) return result;
  const auto dst = tensors_of(original), src = tensors_of(result);
  for (std::size_t i = 0; i < dst.size() && i < src.size(); ++i) dst[i].copy_(src[i]);
  return original;
}

namespace {

/// The group a collective runs on, as replay names it ("3", legacy "ranks:0,1"), and its
/// signature: the op and every argument but tensors and the group.
std::pair<std::string, std::string> group_and_signature(std::string_view op, bool legacy,
                                                        const std::vector<c10::IValue>& args) {
  const auto& names = *collective_params(op, legacy);
  std::string group, signature(op);
  for (std::size_t i = 0; i < names.size() && i < args.size(); ++i) {
    const auto& a = args[i];
    if (names[i] == "group_name" && a.isString()) {
      group = a.toStringRef();
    } else if (names[i] == "ranks" && a.isIntList()) {
      for (const auto r : a.toIntVector()) group += (group.empty() ? "ranks:" : ",") + std::to_string(r);
    } else if (names[i] != "tag" && !a.isTensor() && !a.isTensorList() && !a.isList()) {
      std::ostringstream os;
      os << a;
      signature += " " + names[i] + "=" + os.str();
    } else if (a.isList() && !a.isTensorList()) {
      std::ostringstream os;
      os << a;
      if (os.str().find("Tensor") == std::string::npos) signature += " " + names[i] + "=" + os.str();
    }
  }
  return {group, signature};
}

c10::IValue deep_clone(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().defined() ? c10::IValue(v.toTensor().clone()) : v;
  if (v.isTensorList() || v.isList()) {
    c10::List<at::Tensor> out;
    for (const auto& t : tensors_of(v)) out.push_back(t.clone());
    return out;
  }
  return v;
}

}  // namespace

void restart_collectives(CollectiveResults& results) {
  results.impl().next.clear();
}

void keep_collective(CollectiveResults& results, std::string_view op, bool legacy,
                     const std::vector<c10::IValue>& args, const c10::IValue& result) {
  if (op == "wait_tensor") return;
  auto& r = results.impl();
  auto [group, signature] = group_and_signature(op, legacy, args);
  const auto seq = r.next[group]++;
  // A copy: the graph may write the result in place after the collective.
  const c10::InferenceMode normal(false);
  r.kept[{group, seq}] = {std::move(signature), deep_clone(result)};
}

c10::IValue take_collective(CollectiveResults& results, std::string_view op, bool legacy,
                            std::vector<c10::IValue>& args) {
  if (op == "wait_tensor") return args[0];
  auto& r = results.impl();
  const auto [group, signature] = group_and_signature(op, legacy, args);
  const auto seq = r.next[group]++;
  const auto it = r.kept.find({group, seq});
  if (it == r.kept.end())
    throw ReplayError("collective #" + std::to_string(seq) + " on process group \"" + group + "\" (" +
                      signature + ") has no counterpart in the run whose results it takes");
  if (it->second.signature != signature)
    throw ReplayError("collective #" + std::to_string(seq) + " on process group \"" + group + "\" is " +
                      signature + " here but " + it->second.signature + " in the run whose results it takes");
  const c10::IValue& kept = it->second.value;
  const bool in_place = op.ends_with('_') || op == "all_gather_into_tensor_out";
  if (!in_place) {
    // A copy: the graph may write the result in place, and the kept result is taken again (a
    // lazy replay's second pass, then --coor's alone run).
    const c10::InferenceMode normal(false);
    return deep_clone(kept);
  }
  const std::size_t target = op == "all_gather_into_tensor_out" ? args.size() - 1 : 0;
  const auto dst = tensors_of(args[target]), src = tensors_of(kept);
  for (std::size_t i = 0; i < dst.size() && i < src.size(); ++i) dst[i].copy_(src[i]);
  return args[target];
}

}  // namespace detail
}  // namespace gparity::runtime
