#pragma once
// Comparing bucket plans (`gparity buckets`): same partition? same member order? for each moved
// member, its byte offset in both plans. Results go to a FindingConsumer with the evidence each
// side gave; nothing here formats for a terminal.

#include "diff/report/finding.hpp"
#include "diff/runs/bucket_plan.hpp"

namespace gparity::diff {

/// Compares the plans: every rank of each side against its first rank, then the baseline's
/// rank r against the candidate's rank r (plans matched by rank, then position; a side with a
/// single plan is compared with the other's plans whatever their ranks). Emits begin/findings/
/// checks/end; returns the exit code (0 same, 1 differences).
int report_buckets(const BucketPlans& baseline, const BucketPlans& candidate, FindingConsumer& out);

}  // namespace gparity::diff
