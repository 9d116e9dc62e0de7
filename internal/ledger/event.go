// Package ledger is astra's only database: an append-only, hash-chained
// NDJSON log stored as gzip members in var/schedules/YYYY-MM[.NNN].ndjson.gz.
package ledger

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/astra-gitops/astra/internal/money"
)

// Kind names what an event records.
type Kind string

// Event kinds. Every decision astra takes is one of these.
const (
	RunClaimed        Kind = "run.claimed"
	RunCompleted      Kind = "run.completed"
	RunFailed         Kind = "run.failed"
	RunSkipped        Kind = "run.skipped"
	RunRetryScheduled Kind = "run.retry_scheduled"
	RunDeadLettered   Kind = "run.dead_lettered"
	RunStarted        Kind = "run.started"   // a fan-out job took the claim its plan made for it
	ClaimRefused      Kind = "claim.refused" // astra run --claim of a claim that is not open for a job

	DeadLetterReleased Kind = "dead_letter.released"

	ApprovalRequested Kind = "approval.requested"
	ApprovalApproved  Kind = "approval.approved"
	ApprovalRejected  Kind = "approval.rejected"
	ApprovalExpired   Kind = "approval.expired"
	ApprovalConsumed  Kind = "approval.consumed"
	ApprovalRefused   Kind = "approval.refused"      // a token or a decision that does not approve
	ApprovalIgnored   Kind = "approval.ignored"      // a token that approves nothing yet (its pull request is open)
	ApprovalUnchecked Kind = "approval.check_failed" // GitHub could not be asked; checked again next run

	BudgetWarning  Kind = "budget.warning"
	BudgetExceeded Kind = "budget.exceeded"
	BudgetPaused   Kind = "budget.paused"
	BudgetResumed  Kind = "budget.resumed"

	// CatchupDropped summarises, once per schedule and run, the slots its
	// catch-up policy left out (count, first and last in Detail).
	CatchupDropped Kind = "catchup.dropped"

	// Tick is a cron tick (astra run-due): with its events still to be
	// committed, and for a tick that recorded nothing at most once per
	// state.TickEvery, so an idle repository is not one commit per tick. Status ok or failed; Detail
	// counts its outcomes. It is what `astra status` shows as the last tick.
	Tick Kind = "tick"

	ScheduleCreated Kind = "schedule.created"
	ScheduleUpdated Kind = "schedule.updated"
	ScheduleDeleted Kind = "schedule.deleted"

	RollbackCompleted Kind = "rollback.completed"
	RollbackFailed    Kind = "rollback.failed"

	NotifySent      Kind = "notify.sent"
	MemoryStored    Kind = "memory.stored" // in var/memory only: a run's result with its provenance
	MemoryPurged    Kind = "memory.purged"
	TriggerAccepted Kind = "trigger.accepted" // who triggered which event, and the signature's id
	TriggerRefused  Kind = "trigger.refused"
	ActionRefused   Kind = "action.refused" // a person's command the policies do not allow

	LedgerRepaired   Kind = "ledger.repaired"
	LedgerCheckpoint Kind = "ledger.checkpoint"
	LedgerMigrated   Kind = "ledger.migrated" // the ledger moved to another branch (status failed: the move was cancelled)
	// ClockCorrected voids what a wrong clock decided after a time a
	// person named (astra ledger correct-clock; state.Correction).
	ClockCorrected Kind = "ledger.clock_corrected"

	// TrustRiskAccepted: tier 2 ran without the safety posture it needs,
	// as policies' trust.accept_risk accepts; once per run, with the
	// failing checks.
	TrustRiskAccepted Kind = "trust.risk_accepted"

	// LedgerTampered: a run of a sealed ledger found astra's files changed
	// by commits it did not seal, or lines no valid seal covers, and put
	// them back (the detail says which commits, by whom, which files, and
	// where the bytes it took out are kept). Tier 2 stops until
	// TrustResumed.
	LedgerTampered Kind = "ledger.tampered"
	// LedgerKeyed: the first run holding the ledger key on a branch with
	// no sealed commit: sealing starts here.
	LedgerKeyed Kind = "ledger.keyed"
	// TrustResumed: a person acknowledged the tampering recorded before
	// (astra trust resume): tier 2 runs again.
	TrustResumed Kind = "trust.resumed"
	// BackfillRequested: a person asked for a schedule's past slots to run
	// (astra backfill): who, the range, the reason and the slots; each
	// slot is then decided like any other, under its own key.
	BackfillRequested Kind = "backfill.requested"
	// SpillRefused: a spill branch a run did not merge (unsealed in a
	// sealed ledger, or holding events no lost outcome push makes); the
	// branch is kept under astra/spill-refused/.
	SpillRefused Kind = "spill.refused"
	// AstraPaused: a person stopped every run (astra pause --all), with
	// why: until AstraResumed, nothing starts (run.skipped, reason paused).
	AstraPaused  Kind = "astra.paused"
	AstraResumed Kind = "astra.resumed"
	// RunCancelled: a person withdrew a pending retry or approval request
	// of one run, or cancelled its running attempt (astra cancel), with
	// why: it does not run, or runs no further.
	RunCancelled Kind = "run.cancelled"
)

// Reasons carried by run.skipped and run.failed events.
const (
	ReasonBudget          = "budget"
	ReasonApprovalPending = "approval_pending"
	ReasonRejected        = "rejected"
	ReasonPaused          = "paused"
	ReasonRateLimited     = "rate_limited"
	ReasonScopeDenied     = "scope_denied"
	ReasonInvalidInput    = "invalid_input"  // the payload or event does not match the tool's input_schema
	ReasonNonIdempotent   = "non_idempotent" // a dead letter instead of a retry: the tool declares idempotent: false
	ReasonToolDenied      = "tool_denied"    // the tool allow/deny lists of the schedule, its actor or an earlier chain step refuse the tool
	ReasonPolicy          = "policy"
	ReasonNotDue          = "not_due"
	ReasonDuplicate       = "duplicate"
	ReasonMissed          = "missed"      // superseded or too late under the catch-up policy
	ReasonDeadLetter      = "dead_letter" // schedule quarantined after dead-lettering
	ReasonPosture         = "posture"     // tier 2 without the safety posture it needs (astra doctor)
	ReasonDisabled        = "disabled"    // the slots that fell while a schedule was disabled, counted once when it is enabled again
	ReasonTampered        = "tampered"    // tier 2 after ledger.tampered, until astra trust resume

	ReasonBudgetExceeded = "budget_exceeded"
	// ReasonUsageAnomaly marks the budget.warning of a run whose tool
	// reported usage past its bounds: its Usage is what was reported,
	// which no sum counts (the run recorded its bounds).
	ReasonUsageAnomaly = "usage_anomaly"
	ReasonLost         = "lost" // claimed, runner died before recording an outcome
	ReasonExit         = "exit" // non-zero exit or HTTP error
	// ReasonCancelled marks the run.failed of an attempt its runner stopped
	// because a person cancelled it (run.cancelled): it is not retried.
	ReasonCancelled = "cancelled"

	// ReasonFanOut marks a run.claimed made by astra plan for a job of a
	// GitHub Actions matrix: the job takes it with astra run --claim.
	ReasonFanOut = "fan_out"
)

// Statuses: the status field of events, in a word.
const (
	StatusOK         = "ok"
	StatusFailed     = "failed"
	StatusSkipped    = "skipped"
	StatusClaimed    = "claimed"
	StatusStarted    = "started"
	StatusRetry      = "retry"
	StatusDeadLetter = "dead_letter"
	StatusReleased   = "released"
	StatusPending    = "pending"
	StatusApproved   = "approved"
	StatusRejected   = "rejected"
	StatusExpired    = "expired"
	StatusConsumed   = "consumed"
	StatusRefused    = "refused"
	StatusIgnored    = "ignored"
	StatusWarning    = "warning"
	StatusExceeded   = "exceeded"
	StatusResumed    = "resumed"
	StatusDeleted    = "deleted"
	StatusDropped    = "dropped"
	StatusContinued  = "continued" // a ledger.checkpoint that continues the one before it
	StatusStored     = "stored"
	StatusPurged     = "purged"
	StatusDisabled   = "disabled"  // schedule.created or .updated of a definition with enabled: false
	StatusCorrected  = "corrected" // ledger.clock_corrected
	StatusRestored   = "restored"  // ledger.tampered: astra's files were put back
	StatusRequested  = "requested" // backfill.requested
	StatusPartial    = "partial"   // approval.approved by one of several approvers an approval needs
	StatusPaused     = "paused"    // astra.paused
	StatusCancelled  = "cancelled" // run.cancelled
)

// ClockTest is the clock field of an event a test clock dated (--now
// with --test-clock): not the machine's time, whatever its ts says.
const ClockTest = "test"

// Modes for the scheduled_vs_manual field.
const (
	ModeScheduled = "scheduled"
	ModeManual    = "manual"
	ModeEvent     = "event"
)

// Usage is what one run consumed.
type Usage struct {
	Tokens      int64     `json:"tokens,omitempty"`
	Cost        money.USD `json:"cost_usd,omitempty"`
	WallClockMS int64     `json:"wall_clock_ms,omitempty"`
	ToolCalls   int64     `json:"tool_calls,omitempty"`
}

// IsZero reports whether nothing was consumed.
func (u Usage) IsZero() bool { return u == Usage{} }

// MaxCount is the most tokens, tool calls or milliseconds a sum of usage
// reaches (2^53-1): counts saturate there instead of wrapping negative, and
// every JSON reader (jq, JavaScript) still reads the number exactly.
const MaxCount = 1<<53 - 1

// AddCount is a+b for usage counts, which are never negative: saturating
// at MaxCount, a negative operand counting as 0.
func AddCount(a, b int64) int64 {
	a, b = min(max(a, 0), MaxCount), min(max(b, 0), MaxCount)
	return min(a+b, MaxCount) // each <= 2^53: no overflow
}

// Add returns the sum of two snapshots, saturating (AddCount, money.USD.Add).
func (u Usage) Add(o Usage) Usage {
	return Usage{AddCount(u.Tokens, o.Tokens), u.Cost.Add(o.Cost), AddCount(u.WallClockMS, o.WallClockMS), AddCount(u.ToolCalls, o.ToolCalls)}
}

// Event is one ledger line. Seq and Prev are assigned by the writer.
//
// The fields named by the contract (seq, ts, event, schedule_id, slot,
// idempotency_key, actor, tool, tier, status, trace_id, scheduled_vs_manual,
// prev) are always written, empty where they do not apply; everything else is
// omitted when empty to keep lines lean. Nothing derivable is stored: a run
// is named by its idempotency key and attempt (RunID), and its span id is a
// hash of that name (SpanID). Times are UTC with second precision.
type Event struct {
	Seq            int64     `json:"seq"`
	TS             time.Time `json:"ts"`
	Clock          string    `json:"clock,omitempty"` // ClockTest when a test clock dated it; "" for the machine's
	Event          Kind      `json:"event"`
	ScheduleID     string    `json:"schedule_id"`
	Slot           time.Time `json:"slot"`
	IdempotencyKey string    `json:"idempotency_key"`
	Actor          string    `json:"actor"`
	Tenant         string    `json:"tenant,omitempty"`
	Tool           string    `json:"tool"`
	Tier           int       `json:"tier"`
	Autonomy       string    `json:"autonomy,omitempty"` // L0..L3 of a run's schedule
	Status         string    `json:"status"`
	Reason         string    `json:"reason,omitempty"`
	TraceID        string    `json:"trace_id"`
	Mode           string    `json:"scheduled_vs_manual"`
	Attempt        int       `json:"attempt,omitempty"`
	Usage          Usage     `json:"usage,omitempty"`
	Output         string    `json:"output,omitempty"` // bounded, redacted tail
	Error          string    `json:"error,omitempty"`

	// Approvals.
	PR          int       `json:"pr,omitempty"`
	By          string    `json:"by,omitempty"`
	ExpiresAt   time.Time `json:"expires_at,omitempty"`
	PayloadHash string    `json:"payload_hash,omitempty"`
	// Comment is what the person who approved or rejected said
	// (--reason), in their words: no reason word, never parsed.
	Comment string `json:"comment,omitempty"`

	// Retries and claims.
	RetryAt time.Time `json:"retry_at,omitempty"`
	Runner  string    `json:"runner,omitempty"`

	// Global budget events.
	Period    string    `json:"period,omitempty"` // day | month
	Threshold float64   `json:"threshold,omitempty"`
	Spent     money.USD `json:"spent_usd,omitempty"`
	Limit     money.USD `json:"limit_usd,omitempty"` // a budget event's limit; a claim's cost reservation

	// Detail holds kind-specific JSON that replay rarely needs
	// (checkpoint state, schedule diffs, rollback commands).
	Detail json.RawMessage `json:"detail,omitempty"`

	Prev string `json:"prev"`
}

// SlotKey is the idempotency key of a schedule's slot: <id>@<slot RFC3339>.
func SlotKey(scheduleID string, slot time.Time) string {
	return scheduleID + "@" + slot.UTC().Format(TimeLayout)
}

// ChainKey is the idempotency key of a step chained after the run parentKey.
func ChainKey(parentKey, scheduleID string) string { return parentKey + ">" + scheduleID }

// RunID names one attempt of a slot: "<idempotency_key>#<attempt>".
func (e *Event) RunID() string { return RunID(e.IdempotencyKey, e.Attempt) }

// RunID names one attempt of a slot; attempt 0 counts as 1.
func RunID(key string, attempt int) string {
	return key + "#" + strconv.Itoa(max(attempt, 1))
}
