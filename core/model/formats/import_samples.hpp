#pragma once
// Importer for the reference `rank<r>.jsonl` format of the bundled samples (one JSON object a
// step: loss / grad_norm with their float32 bit patterns, per parameter shard_xxh3 / full_xxh3,
// dtype, shape, shard_shape, device). Parameters keep the file's order, which is registration
// order. Hash arrays: "param.xxh3" (local shard) and "param.full_xxh3" (gathered tensor).

#include <string>

#include "core/model/run/trace_reader.hpp"

namespace gparity::model {

/// Reads one rank file. Damaged lines become RankTrace::issues; throws InputError only when the
/// file cannot be opened.
RankTrace import_sample_rank(const std::string& path, int rank);

}  // namespace gparity::model
