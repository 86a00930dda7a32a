#pragma once
// PyTorch's `prims` ops are registered by Python (torch._prims) when torch is imported, so a
// C++-only LibTorch has none of them, yet AOT and post-grad graphs call some (mixed precision
// writes prims.convert_element_type; arange lowers to prims.iota). The ones listed here are
// registered with the dispatcher, under PyTorch's schemas, implemented as torch._prims' ATen
// implementations are (so the bits are the same), wherever this LibTorch lacks them.

namespace gparity::runtime {

/// Registers the missing ones; idempotent, thread-safe. A LibTorch (or process) that already has
/// an op keeps its own.
void register_python_prims();

}  // namespace gparity::runtime
