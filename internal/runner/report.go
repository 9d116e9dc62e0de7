package runner

import (
	"time"

	"github.com/astra-gitops/astra/internal/gate"
	"github.com/astra-gitops/astra/internal/ledger"
)

// Actions an outcome reports.
const (
	ActionRan              = "ran"
	ActionFailed           = "failed"
	ActionSkipped          = "skipped"
	ActionMissed           = "missed"
	ActionLost             = "lost"
	ActionAwaitingApproval = "awaiting_approval"
	ActionDryRun           = "dry_run"   // a dry run invoked the tool in dry-run mode
	ActionWouldRun         = "would_run" // a dry run of a tool that cannot dry-run
	ActionDeferred         = "deferred"  // left due for a later run (its lane is busy elsewhere); nothing recorded
)

// Outcome is what happened to one candidate.
type Outcome struct {
	ScheduleID   string       `json:"schedule_id"`
	Name         string       `json:"name"`
	Ref          string       `json:"ref"` // what commands take: the name, or the id when several schedules share it
	Key          string       `json:"idempotency_key"`
	Slot         time.Time    `json:"slot"`
	Kind         string       `json:"kind"` // slot, retry, approved, manual, event, chain, lost, missed
	Mode         string       `json:"scheduled_vs_manual"`
	Tool         string       `json:"tool"`
	Actor        string       `json:"actor"`
	Tier         int          `json:"tier"`
	Attempt      int          `json:"attempt"`
	TraceID      string       `json:"trace_id"`
	Action       string       `json:"action"`
	Reason       string       `json:"reason,omitempty"`
	Detail       string       `json:"detail,omitempty"`
	Usage        ledger.Usage `json:"usage,omitzero"`
	Output       string       `json:"output,omitempty"`
	WouldRun     string       `json:"would_run,omitempty"`
	PR           int          `json:"pr,omitempty"`
	PRURL        string       `json:"pr_url,omitempty"`
	Missed       int          `json:"missed,omitempty"`      // older slots superseded by this one
	MissedMore   bool         `json:"missed_more,omitempty"` // Missed counts only the last 5 years: there were more
	RetryAt      time.Time    `json:"retry_at,omitzero"`
	DeadLettered bool         `json:"dead_lettered,omitempty"`
	Chain        string       `json:"chain_next,omitempty"`
	Notify       bool         `json:"notify,omitempty"` // L2: announce the run
	// RateLimit: an actor rate limit skipped the run; when to try again.
	RateLimit *gate.RateLimit `json:"rate_limit,omitempty"`
}

// Report is the result of a run.
type Report struct {
	Command   string           `json:"command"` // run-due, run, trigger, rollback, or the recorded decision
	Now       time.Time        `json:"now"`
	DryRun    bool             `json:"dry_run"`
	Outcomes  []*Outcome       `json:"outcomes"`
	OverLimit int              `json:"over_limit,omitempty"` // due but beyond --limit: next run
	Alerts    []string         `json:"budget_alerts,omitempty"`
	Raced     int              `json:"raced,omitempty"` // times another runner pushed first
	Commit    string           `json:"commit,omitempty"`
	Pushed    bool             `json:"pushed"`
	Spilled   string           `json:"spilled,omitempty"` // ref holding events that could not be pushed
	Merged    int              `json:"merged_from_spills,omitempty"`
	Repaired  *ledger.Repaired `json:"repaired,omitempty"`
	Approvals []*ApprovalNote  `json:"approvals,omitempty"` // what became of approval requests this run
	// NewSchedules were seen for the first time: their slots before now
	// are not due, the first is the next one.
	NewSchedules []NewSchedule `json:"new_schedules,omitempty"`
	Warnings     []string      `json:"warnings,omitempty"`
	Errors       []string      `json:"errors,omitempty"`
	// InfraErrors are git or GitHub failures the run outlived (an approval
	// that could not be checked): everything else ran, and the run exits 3.
	InfraErrors []string `json:"infra_errors,omitempty"`
	// PushedCommit is the last commit this run pushed: Commit when Pushed,
	// else an earlier one (its claims) or none. Unpushed counts the events
	// committed after it, which only this checkout has (or Spilled).
	PushedCommit string `json:"pushed_commit,omitempty"`
	Unpushed     int    `json:"unpushed_events,omitempty"`
	// UnpushedCommits are local commits the remote lacks (--no-push): the
	// next run that pushes sends them first.
	UnpushedCommits int `json:"unpushed_commits,omitempty"`
	// Interrupted: SIGINT or SIGTERM stopped the run; nothing was pushed
	// after it.
	Interrupted bool `json:"interrupted,omitempty"`
}

// NewSchedule is a schedule first seen by this run.
type NewSchedule struct {
	ID   string    `json:"id"`
	Name string    `json:"name"`
	Next time.Time `json:"next,omitzero"` // its first slot; zero for event-triggered or never-firing schedules
	// RunNow: run_immediately, so it runs once now as well.
	RunNow bool `json:"run_now,omitempty"`
}

// ApprovalNote says what became of one approval request in a run.
type ApprovalNote struct {
	ScheduleID string `json:"schedule_id"`
	Name       string `json:"name"`
	Event      string `json:"event"` // approval.approved, approval.refused, ...
	PR         int    `json:"pr,omitempty"`
	Detail     string `json:"detail"`
}

// Count returns how many outcomes have the action.
func (r *Report) Count(action string) int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Action == action {
			n++
		}
	}
	return n
}

// RateLimited is the rate limit that held back a run the longest, nil when
// none did.
func (r *Report) RateLimited() *gate.RateLimit {
	var last *gate.RateLimit
	for _, o := range r.Outcomes {
		if rl := o.RateLimit; rl != nil && (last == nil || rl.ResetAt.After(last.ResetAt)) {
			last = rl
		}
	}
	return last
}

// Failed reports whether any task failed (exit status 1).
func (r *Report) Failed() bool {
	return r.Count(ActionFailed) > 0 || r.Count(ActionLost) > 0 || len(r.Errors) > 0
}
