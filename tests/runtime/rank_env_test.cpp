// Where a rank sits, from torchrun's, gparity's own or Slurm's environment (core/runtime/rank_env).

#include "core/runtime/rank_env.hpp"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

namespace gparity::runtime {
namespace {

RankEnv env_of(const std::map<std::string, std::string>& vars) {
  return rank_env_from([&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(RankEnv, TorchrunAcrossNodesGivesTheNodeFromGroupRank) {
  const auto e = env_of({{"RANK", "5"},
                         {"WORLD_SIZE", "8"},
                         {"LOCAL_RANK", "1"},
                         {"LOCAL_WORLD_SIZE", "4"},
                         {"GROUP_RANK", "1"},
                         {"MASTER_ADDR", "node0"},
                         {"MASTER_PORT", "29400"}});
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.node_rank, 1);
  EXPECT_EQ(e.master_addr, "node0");
  EXPECT_EQ(e.master_port, 29400);
  EXPECT_EQ(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}}).node_rank, -1);  // not said: not guessed
}

TEST(RankEnv, SlurmGivesRanksNodeAndTheFirstHostOfTheStep) {
  const auto e = env_of({{"SLURM_PROCID", "6"},
                         {"SLURM_NTASKS", "8"},
                         {"SLURM_LOCALID", "2"},
                         {"SLURM_NODEID", "1"},
                         {"SLURM_TASKS_PER_NODE", "4(x2)"},
                         {"SLURM_JOB_NODELIST", "gpu[07-08]"}});
  EXPECT_EQ(e.rank, 6);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 2);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.node_rank, 1);
  EXPECT_EQ(e.master_addr, "gpu07");
  EXPECT_EQ(e.master_port, 29500);
  // The step's own list wins over the job's; MASTER_ADDR / MASTER_PORT win over both.
  EXPECT_EQ(env_of({{"SLURM_PROCID", "0"},
                    {"SLURM_NTASKS", "2"},
                    {"SLURM_JOB_NODELIST", "a[1-9]"},
                    {"SLURM_STEP_NODELIST", "a[3-4]"}})
                .master_addr,
            "a3");
  const auto given = env_of({{"SLURM_PROCID", "0"},
                             {"SLURM_NTASKS", "2"},
                             {"SLURM_JOB_NODELIST", "a1"},
                             {"MASTER_ADDR", "10.0.0.1"},
                             {"MASTER_PORT", "1234"}});
  EXPECT_EQ(given.master_addr, "10.0.0.1");
  EXPECT_EQ(given.master_port, 1234);
}

TEST(RankEnv, RankWinsOverSlurmSoALauncherInsideAnAllocationIsFollowed) {
  const auto e = env_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "16"}});
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
}

TEST(RankEnv, BadValuesNameTheVariable) {
  try {
    env_of({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("SLURM_PROCID=4 is outside SLURM_NTASKS=4"), std::string::npos)
        << e.what();
  }
  try {
    env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "gpu[01-04"}});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("SLURM_JOB_NODELIST"), std::string::npos) << e.what();
  }
  EXPECT_THROW(env_of({{"RANK", "x"}}), std::invalid_argument);
}

TEST(SlurmHostList, FirstHostKeepsPaddingAndSuffixes) {
  EXPECT_EQ(first_slurm_host("node01"), "node01");
  EXPECT_EQ(first_slurm_host("gpu[07-09,12],login1"), "gpu07");
  EXPECT_EQ(first_slurm_host("a1,a2"), "a1");
  EXPECT_EQ(first_slurm_host("rack[2,5]-n[003-004]"), "rack2-n003");
  EXPECT_EQ(first_slurm_host("x[10]y"), "x10y");
  EXPECT_THROW(first_slurm_host(""), std::invalid_argument);
  EXPECT_THROW(first_slurm_host("a]"), std::invalid_argument);
  EXPECT_THROW(first_slurm_host("a[[1]]"), std::invalid_argument);
}

TEST(SlurmTasksPerNode, RepeatsAndListsByNode) {
  EXPECT_EQ(slurm_tasks_on_node("4(x2),3", 0), 4);
  EXPECT_EQ(slurm_tasks_on_node("4(x2),3", 1), 4);
  EXPECT_EQ(slurm_tasks_on_node("4(x2),3", 2), 3);
  EXPECT_EQ(slurm_tasks_on_node("4(x2),3", 3), 0);
  EXPECT_EQ(slurm_tasks_on_node("8", 0), 8);
  EXPECT_EQ(slurm_tasks_on_node("x", 0), 0);
  EXPECT_EQ(slurm_tasks_on_node("2(x", 0), 0);
}

TEST(RankInfoText, RoundTripsAndAGarbledOneStillSaysItsRank) {
  model::RankInfo info{3, 1, "gpu7", "cuda:1"};
  info.node = 1;
  EXPECT_EQ(rank_info_from_text(rank_info_text(info), 3), info);
  const auto garbled = rank_info_from_text("{not json", 2);
  EXPECT_EQ(garbled.rank, 2);
  EXPECT_EQ(garbled.node, -1);
}

}  // namespace
}  // namespace gparity::runtime
