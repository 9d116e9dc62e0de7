package runner

import (
	"context"

	"github.com/astra-gitops/astra/internal/model"
)

// A run that dies after its claim is found lost once the claim's deadline
// passes, and retried per policy. Its tool died with it (the executor's
// parent-death signal and reaper), so the retry is the first complete run,
// unless astra died in the window between the tool's exit and its
// outcome reaching the remote: then the tool ran, and runs again.
//
// For tools where that would do harm (not idempotent, tier 1 or 2) the
// outcome is pushed as soon as it is recorded, so the window is the time
// to record, commit and push it, not the rest of the run. Read-only and
// idempotent tools may run twice harmlessly; their outcomes go out with
// the run's last push.

// pushOutcome pushes t's just-recorded outcome when t's tool must not run
// twice. A failed or rejected push changes nothing: the run's last push
// (finish) publishes everything, re-applied on top of the remote if
// another runner pushed meanwhile. Called with s.mu held.
func (s *session) pushOutcome(ctx context.Context, t *task) {
	if t.tool == nil || t.tool.Idempotent || t.sched.SafetyTier == model.TierReadOnly || s.r.opts.NoPush {
		return
	}
	_ = s.publish(ctx, "outcome")
}
