// Pickled Flight Recorder dumps (PyTorch 2.11's default form, tests/data/flight_recorder_pickle)
// read by content give exactly what the JSON form of the same dumps gives; the JSON was written
// from the pickles by Python's own unpickler (tests/data/flight_recorder_pickle/to_json.py).

#include "core/model/formats/flight_recorder_pickle.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "core/model/base/input_error.hpp"
#include "core/model/formats/flight_recorder.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace gparity::model;

const std::string kFrPickleData = std::string(GPARITY_SOURCE_DIR) + "/tests/data/flight_recorder_pickle";

TEST(FlightRecorderPickle, SameDumpAsTheJsonForm) {
  for (int r = 0; r < 4; ++r) {
    const auto pkl = read_flight_recorder(kFrPickleData + "/fr_rank" + std::to_string(r) + ".pkl");
    const auto json =
        read_flight_recorder(kFrPickleData + "/json/rank" + std::to_string(r) + "_flight_recorder.json");
    EXPECT_EQ(pkl.rank, r);
    EXPECT_EQ(json.rank, r);
    EXPECT_EQ(pkl.version, "2.10");
    EXPECT_EQ(pkl.version, json.version);
    EXPECT_EQ(pkl.comm_lib_version, json.comm_lib_version);
    ASSERT_EQ(pkl.groups.size(), json.groups.size());
    EXPECT_EQ(pkl.groups[0].ranks, (std::vector<std::int64_t>{0, 1, 2, 3}));
    ASSERT_EQ(pkl.entries.size(), json.entries.size());
    ASSERT_GT(pkl.entries.size(), 20U);
    for (std::size_t i = 0; i < pkl.entries.size(); ++i) {
      const auto& a = pkl.entries[i];
      const auto& b = json.entries[i];
      EXPECT_EQ(a.record_id, b.record_id);
      EXPECT_EQ(a.pg_name, b.pg_name);
      EXPECT_EQ(a.collective_seq_id, b.collective_seq_id);
      EXPECT_EQ(a.profiling_name, b.profiling_name);
      EXPECT_EQ(a.input_sizes, b.input_sizes);
      EXPECT_EQ(a.output_sizes, b.output_sizes);
      EXPECT_EQ(a.input_dtypes, b.input_dtypes);
      EXPECT_EQ(a.state, b.state);
      EXPECT_EQ(a.time_created_ns, b.time_created_ns);
      ASSERT_EQ(a.frames.size(), b.frames.size());
      if (!a.frames.empty()) {
        EXPECT_EQ(a.frames[0].filename, b.frames[0].filename);
      }
    }
    EXPECT_EQ(pkl.entries[0].profiling_name, "nccl:all_gather");
  }
}

TEST(FlightRecorderPickle, RecognisedByContentWhateverTheName) {
  gparity::testing::TempDir tmp;
  std::ifstream in(kFrPickleData + "/fr_rank2.pkl", std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto path = tmp.write("dump.bin", bytes);
  EXPECT_TRUE(is_flight_recorder_pickle(path));
  EXPECT_EQ(read_flight_recorder(path).entries.size(),
            read_flight_recorder(kFrPickleData + "/fr_rank2.pkl").entries.size());
  EXPECT_FALSE(is_flight_recorder_pickle(kFrPickleData + "/json/rank2_flight_recorder.json"));
}

TEST(FlightRecorderPickle, RefusesGlobalsAndTruncation) {
  gparity::testing::TempDir tmp;
  // A dict whose "version" is os.system('x'): plain-data dumps reference no global at all.
  const auto evil =
      tmp.write("rank0.pkl",
                std::string("\x80\x02}(X\x07\x00\x00\x00versioncos\nsystem\nX\x01\x00\x00\x00x\x85Ru.", 37));
  try {
    (void)read_flight_recorder(evil);
    FAIL() << "an os.system reference was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("os.system"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank0.pkl: byte "), std::string::npos) << e.what();
  }
  std::ifstream in(kFrPickleData + "/fr_rank1.pkl", std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  bytes.resize(bytes.size() / 3);
  const auto cut = tmp.write("fr_rank1.pkl", bytes);
  try {
    (void)read_flight_recorder(cut);
    FAIL() << "a truncated pickle was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

}  // namespace
