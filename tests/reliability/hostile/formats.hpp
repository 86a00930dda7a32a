#pragma once
// The hostile inputs of docs/reliability.md by the format they attack, each format's builders
// in a file of its own (hostile_inputs.cpp lists them all, in this order): any input and the
// output paths, trace runs and their importers (samples, TensorBoard), checkpoints
// (safetensors, DCP), graphs (FX text, graph JSON, TORCH_TRACE, .pt2), Flight Recorder dumps,
// and bucket plans, gate policies and NCCL graph files.

#include "tests/reliability/hostile/builders.hpp"

namespace gparity::testing::hostile {

void add_any_inputs(const InputAdder& add);              // any_input.cpp
void add_run_inputs(const InputAdder& add);              // runs.cpp
void add_checkpoint_inputs(const InputAdder& add);       // checkpoints.cpp
void add_graph_inputs(const InputAdder& add);            // graphs.cpp
void add_flight_recorder_inputs(const InputAdder& add);  // flight_recorder.cpp
void add_plan_inputs(const InputAdder& add);             // plans.cpp

}  // namespace gparity::testing::hostile
