// Views of fuzz campaigns and of the defence matrix: the JSON object of docs/contract.md §5, a JUnit
// report, and the human summaries printed on stdout. Campaigns only run; rendering is here.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz/campaign.h"
#include "fuzz/matrix.h"

namespace inboxsim {

// The campaign as docs/contract.md §5 JSON: seeds, failures, failed_seeds, counterexamples, stats,
// coverage (§8.3), wall_ms (and, as extensions, the violated invariants, how many seeds reached
// each probe, the probes required and those of them never reached, and the config under test).
nlohmann::ordered_json campaign_json(const CampaignOptions& options, const CampaignResult& result);

// A JUnit XML report: one test case per seed, a failure for each failing one with the command
// that replays it (replay_command), and the campaign's configuration as the suite's properties.
std::string campaign_junit(const CampaignOptions& options, const CampaignResult& result);

// The command that runs `seed` again exactly as the campaign ran it: its workload, swarm, story
// size and every --set, each argument quoted for a POSIX shell where it needs it.
std::string replay_command(const CampaignOptions& options, uint64_t seed);

// The human summary printed on stdout: failing seeds with the options they drew, each
// counterexample with its replay command, the probes reached (how often, in how many seeds) and
// those never reached, and a verdict line (FAIL also when a required probe was never reached).
void print_campaign(std::ostream& out, const CampaignOptions& options,
                    const CampaignResult& result);

// Prints the matrix as a table: one row per combination, its failing seeds, the invariants it
// broke and the command that replays its counterexample.
void print_matrix(std::ostream& out, const std::vector<MatrixRow>& rows);
nlohmann::ordered_json matrix_json(const std::vector<MatrixRow>& rows);

// A matrix row's defence columns, "inbox": true, … in the order of defence_names().
void add_defences_json(nlohmann::ordered_json& row,
                       const std::array<bool, kDefenceCount>& defences);

}  // namespace inboxsim
