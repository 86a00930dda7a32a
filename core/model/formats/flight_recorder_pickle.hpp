#pragma once
// Flight Recorder dumps in PyTorch's default pickled form (torch._C._distributed_c10d.
// _dump_nccl_trace(): a dict of plain data) turned into the JSON shape the JSON reader
// (flight_recorder.hpp) consumes, through the non-executing pickle reader with an empty
// allow-list: a dump that references any global is refused. Recognised by content.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/model/formats/flight_recorder.hpp"

namespace gparity::model {

/// True when `head` starts like a pickle (PROTO opcode of protocol 2 to 5).
bool looks_like_pickle(std::span<const std::byte> head) noexcept;

/// True when the file at `path` starts like a pickled Flight Recorder dump: a pickle whose
/// top-level dict opens with the dump's "version" key (cheap: reads the first 64 bytes).
bool is_flight_recorder_pickle(const std::string& path) noexcept;

/// The dump as the JSON text the JSON reader takes (tuples as arrays, None as null, frames kept).
std::string flight_recorder_pickle_to_json(std::span<const std::byte> bytes, const std::string& source);

/// A pickle that may or may not be a dump: the dump when its top level is a dict with an
/// "entries" key, otherwise nullopt with `holds` saying what the pickle holds instead ("a dict
/// with keys 'hello'", "a list"). A pickle that references any global is refused (InputError),
/// dump or not: nothing in it is ever imported or called.
std::optional<FlightRecorderDump> read_flight_recorder_pickle_if_dump(std::span<const std::byte> bytes,
                                                                      const std::string& source,
                                                                      std::string& holds);

/// Parses a pickled dump. The rank comes from the file name (rank_in_file_name).
FlightRecorderDump parse_flight_recorder_pickle(std::span<const std::byte> bytes, const std::string& source);

}  // namespace gparity::model
