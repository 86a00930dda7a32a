#pragma once
// Importer for TensorBoard event files (`events.out.tfevents.*`, as torch.utils.tensorboard and
// torchtitan write them). A file is a sequence of TFRecords: uint64 length, masked CRC-32C of
// the length, the payload, masked CRC-32C of the payload (all little-endian); each payload is an
// Event protobuf (core/model/formats/proto/tensorboard_event.proto). Both CRCs of every record are
// verified. Reading stops at the first damaged record: the records before it are used and the
// damage is a TraceIssue naming the file and the record's byte offset (a record cut short at the
// end of the file is TruncatedTail, anything else CorruptLine). Scalar summaries keep their
// exact float bits (simple_value is a float32; scalar tensors keep their dtype); events that are
// not scalar summaries (file_version, graph_def, histograms, images, ...) are skipped knowingly.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/run/trace_reader.hpp"

namespace gparity::model {

/// Tags read as the loss, first match wins (torchtitan: loss_metrics/global_avg_loss).
inline constexpr std::array<std::string_view, 3> kTensorBoardLossTags = {"loss_metrics/global_avg_loss",
                                                                         "loss", "train/loss"};
/// Tags read as the grad norm, first match wins; otherwise the only tag starting "grad_norm/".
inline constexpr std::array<std::string_view, 3> kTensorBoardGradNormTags = {"grad_norm", "grad_norm/total",
                                                                             "train/grad_norm"};

/// True for names TensorBoard writers give event files: "events.out.tfevents.<...>".
bool is_tensorboard_event_file(std::string_view filename) noexcept;

/// Walks the TFRecords of `bytes`, verifying both CRCs of each; calls `on_record(payload,
/// offset)` for every intact record; a callback that returns false marks its record corrupt (the
/// payload is not what it should be). Returns the damage, if any: reading stopped there.
std::optional<TraceIssue> scan_tfrecords(
    std::span<const std::byte> bytes, const std::string& source,
    const std::function<bool(std::span<const std::byte> payload, std::uint64_t offset)>& on_record);

/// Reads the event files of one rank, in the given order, into one trace. A step seen again
/// (a restart writes a new file) keeps its first value of each tag and is noted. Throws
/// InputError only when a file cannot be opened.
RankTrace import_tensorboard_rank(std::span<const std::string> paths, int rank);

}  // namespace gparity::model
