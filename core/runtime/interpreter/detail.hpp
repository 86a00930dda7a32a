#pragma once
// Shared between the interpreter's .cpp files only (never included by a public header): the
// LibTorch-side helpers of schema binding, inputs and collectives.

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <optional>
#include <string>

#include "core/model/base/dtype.hpp"

namespace gparity::runtime::detail {

/// "cuda:1" / "cpu" as a c10::Device; throws ReplayError for text LibTorch rejects.
c10::Device parse_device(const std::string& text);

}  // namespace gparity::runtime::detail

#include <ATen/core/function_schema.h>

#include <map>
#include <vector>

#include "core/model/graph/graph.hpp"

namespace gparity::runtime::detail {

/// What binding a value needs at run time: earlier nodes' results and the symbols' values.
struct BindContext {
  const model::Graph* graph = nullptr;
  const std::vector<c10::IValue>* env = nullptr;  // per node, its result
  const std::map<std::string, std::int64_t>* symbols = nullptr;
};

/// True when `v` needs BindContext to be converted (node references, symbols).
bool needs_runtime(const model::Value& v) noexcept;

/// `v` as the IValue an argument of type `type` takes (typed lists, optionals, ScalarType /
/// Layout / MemoryFormat / Device literals, Python scalars for Tensor arguments); throws
/// ReplayError saying what does not fit.
c10::IValue bind_value(const model::Value& v, const c10::TypePtr& type, const BindContext& ctx);
/// `v` as an IValue without a schema (operator.* arguments, collective arguments).
c10::IValue plain_value(const model::Value& v, const BindContext& ctx);

/// One schema argument of a node: its value in the graph (nullptr: the schema's default).
struct BoundArg {
  const model::Value* value = nullptr;
  c10::IValue constant;  // the converted value when it needs nothing at run time, or the default
  bool runtime = false;  // convert `value` at every run
  c10::TypePtr type;
};

/// Matches a node's positional and keyword arguments to `schema`: too many or too few
/// arguments, unknown or repeated keywords, and constants that do not fit are ReplayErrors.
std::vector<BoundArg> bind_arguments(const c10::FunctionSchema& schema, const model::Graph& g,
                                     const model::Node& n);

/// Pushes the arguments' values onto `stack` for a boxed call.
void push_arguments(const std::vector<BoundArg>& args, const BindContext& ctx,
                    std::vector<c10::IValue>& stack);

}  // namespace gparity::runtime::detail

namespace gparity::runtime {
class GroupComm;
}

namespace gparity::runtime::detail {

/// The parameter names of a functional collective ("all_reduce", legacy: the old
/// c10d_functional form), or nullptr when `op` is not one this interpreter runs.
const std::vector<std::string>* collective_params(std::string_view op, bool legacy);

/// Runs functional collective `op` with its arguments in collective_params order (None for
/// those not given). `comm` may be null on a single rank: then only one-rank groups run.
c10::IValue run_collective(GroupComm* comm, std::string_view op, bool legacy, std::vector<c10::IValue>& args);

}  // namespace gparity::runtime::detail

namespace gparity::runtime {
class CollectiveResults;
}

namespace gparity::runtime::detail {

/// Restarts the per-group sequence numbers (a run begins).
void restart_collectives(CollectiveResults& results);
/// Keeps a copy of a collective's result (run_collective's) under its group and sequence number.
void keep_collective(CollectiveResults& results, std::string_view op, bool legacy,
                     const std::vector<c10::IValue>& args, const c10::IValue& result);
/// The kept result of the collective with this group and sequence number, written into the
/// target of an in-place form as run_collective would; throws ReplayError when there is none or
/// its signature differs.
c10::IValue take_collective(CollectiveResults& results, std::string_view op, bool legacy,
                            std::vector<c10::IValue>& args);

}  // namespace gparity::runtime::detail
