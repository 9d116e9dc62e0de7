package model

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/astra-gitops/astra/internal/cron"
	"github.com/astra-gitops/astra/internal/money"
)

// Defaults: a tier-1 per-day budget of 4 runs; the task budget, retry and
// global budget figures; --limit 10.
const (
	DefaultPerDayBudget  = 4
	DefaultPriority      = 5
	DefaultMaxTokens     = 50_000
	DefaultMaxCost       = money.Dollar / 2
	DefaultMaxWallClock  = 300 * time.Second
	DefaultMaxToolCalls  = 10
	DefaultRetryAttempts = 3
	DefaultBackoffBase   = 5 * time.Second
	DefaultBackoffMax    = 300 * time.Second
	DefaultCatchupWindow = 24 * time.Hour
	DefaultSkipWindow    = 15 * time.Minute // how late a slot may be under catchup: skip
	DefaultCatchupMax    = 10
	DefaultApprovalTTL   = 24 * time.Hour
	DefaultActor         = "astra"
	DefaultDailyLimit    = 5 * money.Dollar
	DefaultMonthlyLimit  = 50 * money.Dollar
	DefaultRatePerMinute = 60
	MaxChainDepth        = 8
)

// DefaultAlertThresholds are the global budget alert levels.
var DefaultAlertThresholds = []float64{0.5, 0.8, 0.9}

// Catch-up policies for missed slots.
const (
	CatchupLatest = "latest" // run only the newest missed slot
	CatchupAll    = "all"    // run each missed slot, oldest first, bounded
	CatchupSkip   = "skip"   // run a slot only when on time
)

// Result routes: where a successful run's result goes.
const (
	RouteSilent       = "silent"
	RouteNotify       = "notify"
	RouteMemoryUpdate = "memory_update"
	RouteChainNext    = "chain_next"
)

// Schedule is one recurring (or event-driven) task definition.
type Schedule struct {
	Meta Meta `yaml:"-" json:"-"`

	ID             string         `yaml:"id" json:"id" doc:"Stable identifier; derived from tenant and name when absent."`
	Name           string         `yaml:"name" json:"name" doc:"Human name, unique per tenant." required:"true"`
	Description    string         `yaml:"description" json:"description,omitempty"`
	Type           string         `yaml:"type" json:"type" doc:"Schedule type, a filter for --schedule-type; defaults to target_tool."`
	Tenant         string         `yaml:"tenant" json:"tenant,omitempty" doc:"Owning tenant; selects tenant task policies."`
	Cron           string         `yaml:"cron" json:"cron,omitempty" doc:"5-field cron expression, @daily-style descriptor or @every <duration>."`
	Frequency      string         `yaml:"frequency" json:"frequency,omitempty" doc:"Shorthand instead of cron." enum:"hourly,daily,weekly,monthly"`
	Interval       Duration       `yaml:"interval" json:"interval,omitempty" doc:"Run every interval, anchored at the Unix epoch so all runners agree."`
	OnEvent        string         `yaml:"on_event" json:"on_event,omitempty" doc:"Run when 'astra trigger <event>' is called with this event name."`
	RunImmediately bool           `yaml:"run_immediately" json:"run_immediately,omitempty" doc:"Run once as soon as the schedule is first seen."`
	At             string         `yaml:"at" json:"at,omitempty" doc:"One-off run: its only slot, an RFC 3339 time or a date (midnight in the schedule's timezone)."`
	StartAt        string         `yaml:"start_at" json:"start_at,omitempty" doc:"No slot before this RFC 3339 time or date (midnight in the schedule's timezone)."`
	EndAt          string         `yaml:"end_at" json:"end_at,omitempty" doc:"No slot after this RFC 3339 time or date (a date includes its whole day)."`
	Exclude        []string       `yaml:"exclude" json:"exclude,omitempty" doc:"Names of calendars (policies calendars) on whose dates and events no slot falls, read in the schedule's timezone."`
	Timezone       string         `yaml:"timezone" json:"timezone" doc:"IANA time zone the cron fields are read in (default UTC)."`
	TargetTool     string         `yaml:"target_tool" json:"target_tool" doc:"Tool from the policies tool catalog." required:"true"`
	Payload        map[string]any `yaml:"payload" json:"payload,omitempty" doc:"JSON-compatible input handed to the tool."`
	SafetyTier     Tier           `yaml:"safety_tier" json:"safety_tier" doc:"0 read_only, 1 local_write, 2 external; defaults to the tool's tier and may only be stricter."`
	PerDayBudget   int            `yaml:"per_day_budget" json:"per_day_budget" minimum:"0" doc:"Runs per UTC day (tier 1 default 4; tier 0 has no run count, but its spend counts against the global budget)."`
	Enabled        bool           `yaml:"enabled" json:"enabled" doc:"Disabled schedules are never due (default true)."`
	Priority       int            `yaml:"priority" json:"priority" minimum:"0" maximum:"9" doc:"0-9, higher runs first (default 5)."`
	Critical       bool           `yaml:"critical" json:"critical,omitempty" doc:"Keeps running when the global budget pauses non-critical work."`
	Actor          string         `yaml:"actor" json:"actor" doc:"Actor the run acts as; its scopes must cover the tool's capabilities (default astra)."`
	Autonomy       Autonomy       `yaml:"autonomy" json:"autonomy" doc:"L0 ask, L1 draft, L2 execute+notify, L3 silent; may only be stricter than the actor's default."`
	Budget         TaskBudget     `yaml:"budget" json:"budget"`
	Retry          Retry          `yaml:"retry" json:"retry"`
	RetryNonIdem   bool           `yaml:"retry_non_idempotent" json:"retry_non_idempotent,omitempty" doc:"Retry failed runs even when the tool declares idempotent: false (default: they go to the dead letter)."`
	Catchup        Catchup        `yaml:"catchup" json:"catchup"`
	Lane           string         `yaml:"lane" json:"lane,omitempty" doc:"Schedules sharing a lane never run concurrently."`
	RunsOn         Labels         `yaml:"runs_on" json:"runs_on,omitempty" doc:"astra plan: GitHub Actions runner label(s) of this schedule's job (default the tool's runs_on, else ubuntu-latest)."`
	ResultRoute    ResultRoute    `yaml:"result_route" json:"result_route"`
	ApprovalTTL    Duration       `yaml:"approval_ttl" json:"approval_ttl" doc:"How long an approval request stays valid (default 24h)."`
	ApprovalsReq   int            `yaml:"approvals_required" json:"approvals_required,omitempty" minimum:"1" doc:"Distinct approvers an approval needs (default the task policy's, else 1)."`
	Quarantine     bool           `yaml:"quarantine" json:"quarantine,omitempty" doc:"Stop all future slots once a slot is dead-lettered, until released."`
	Recall         *Recall        `yaml:"recall" json:"recall,omitempty" doc:"Hand the tool recent agent memory (var/memory) within a retrieval budget."`
	ToolAllow      []string       `yaml:"tool_allow" json:"tool_allow,omitempty" doc:"Globs of tool names and capabilities this schedule may use, its chained steps included; each tool may also enforce them per call (ASTRA_TOOL_ALLOW). Unset: any tool."`
	ToolDeny       []string       `yaml:"tool_deny" json:"tool_deny,omitempty" doc:"Globs of tool names and capabilities this schedule may not use, its chained steps included (ASTRA_TOOL_DENY); deny wins over allow."`

	Extends string `yaml:"extends" json:"extends,omitempty" doc:"Template (policies templates) whose keys this schedule takes where it writes none; the schedule's keys win over the template's, the template's over policies defaults."`

	// Resolved by the loader.
	Spec *cron.Spec     `yaml:"-" json:"-"`
	Loc  *time.Location `yaml:"-" json:"-"`
}

// Template is a partial schedule in policies templates: a schedule that
// says extends: <name> takes its keys where it writes none. A template
// extends nothing and has no id or name.
type Template Schedule

// ScheduleDefaults are policies defaults: the repository's values for
// the keys a schedule (and its template) leave out, before astra's own.
type ScheduleDefaults struct {
	Meta     Meta       `yaml:"-" json:"-"`
	Timezone string     `yaml:"timezone" json:"timezone,omitempty" doc:"IANA time zone of schedules that name none."`
	Actor    string     `yaml:"actor" json:"actor,omitempty" doc:"Actor of schedules that name none."`
	Budget   TaskBudget `yaml:"budget" json:"budget"`
	Retry    Retry      `yaml:"retry" json:"retry"`
	Catchup  Catchup    `yaml:"catchup" json:"catchup"`
	// CancelPoll is not a schedule's: the runner of an attempt looks this
	// often for a cancel of it (astra cancel).
	CancelPoll Duration `yaml:"cancel_poll" json:"cancel_poll,omitempty" doc:"How often the runner of a running attempt fetches astra's branch to see whether a person cancelled it (astra cancel), and stops it if so (default 30s; 0: it is not stopped)."`
}

// DefaultCancelPoll is how often a running attempt looks for a cancel
// when the policies do not say.
const DefaultCancelPoll = 30 * time.Second

// CancelPollD is how often a running attempt looks for a cancel; 0 when
// it does not.
func (d ScheduleDefaults) CancelPollD() time.Duration {
	if !d.Meta.Has("cancel_poll") {
		return DefaultCancelPoll
	}
	return d.CancelPoll.D()
}

// TaskBudget caps one run.
type TaskBudget struct {
	Meta         Meta      `yaml:"-" json:"-"`
	MaxTokens    int64     `yaml:"max_tokens" json:"max_tokens" minimum:"0" doc:"Tokens reported by the tool (default 50000)."`
	MaxCost      money.USD `yaml:"max_cost_usd" json:"max_cost_usd" doc:"USD reported by the tool (default 0.50); 0 declares a tool that spends nothing: any cost it reports stops it."`
	MaxWallClock Duration  `yaml:"max_wall_clock" json:"max_wall_clock" doc:"Wall-clock limit; the tool's process group is killed (default 300s)."`
	MaxToolCalls int64     `yaml:"max_tool_calls" json:"max_tool_calls" minimum:"0" doc:"Tool invocations, chained steps included (default 10)."`
}

// Recall bounds the agent memory handed to a tool (retrieval
// budgets). Zero fields take the defaults of the run's task type.
type Recall struct {
	Meta       Meta `yaml:"-" json:"-"`
	MaxTokens  int  `yaml:"max_tokens" json:"max_tokens,omitempty" minimum:"0" doc:"Most estimated tokens of memory (default by task type: heartbeat 500, scheduled 2000, event 1500, workflow 3000, interactive 4000)."`
	MaxEntries int  `yaml:"max_entries" json:"max_entries,omitempty" minimum:"0" doc:"Most entries (default by task type: 5, 15, 10, 20, 25)."`
}

// RecallDefaults are the retrieval budgets by task type.
var RecallDefaults = map[string]Recall{
	"heartbeat":   {MaxTokens: 500, MaxEntries: 5},
	"scheduled":   {MaxTokens: 2000, MaxEntries: 15},
	"event":       {MaxTokens: 1500, MaxEntries: 10},
	"workflow":    {MaxTokens: 3000, MaxEntries: 20},
	"interactive": {MaxTokens: 4000, MaxEntries: 25},
}

// Retry is the retry policy for failed runs.
type Retry struct {
	Meta        Meta     `yaml:"-" json:"-"`
	MaxAttempts int      `yaml:"max_attempts" json:"max_attempts" minimum:"1" doc:"Attempts before the slot is dead-lettered (default 3)."`
	BackoffBase Duration `yaml:"backoff_base" json:"backoff_base" doc:"First backoff, doubled per attempt (default 5s)."`
	BackoffMax  Duration `yaml:"backoff_max" json:"backoff_max" doc:"Backoff ceiling (default 300s)."`
}

// Backoff is the delay before attempt n+1 after n failed attempts.
func (r Retry) Backoff(n int) time.Duration {
	d := r.BackoffBase.D()
	for i := 1; i < n && d < r.BackoffMax.D(); i++ {
		d *= 2
	}
	return min(d, r.BackoffMax.D())
}

// Catchup says what happens to slots that CI cron missed.
type Catchup struct {
	Meta   Meta     `yaml:"-" json:"-"`
	Policy string   `yaml:"policy" json:"policy" doc:"latest (default), all or skip." enum:"latest,all,skip"`
	Window Duration `yaml:"window" json:"window" doc:"How late a slot may still run (default 24h; 15m for skip)."`
	Max    int      `yaml:"max" json:"max" minimum:"1" maximum:"100" doc:"With policy all: at most this many slots per run (default 10)."`
}

// ResultRoute says where a run's result goes. In YAML it is either a bare
// route name or a mapping with type and options.
type ResultRoute struct {
	Meta              Meta   `yaml:"-" json:"-"`
	Type              string `yaml:"type" json:"type" doc:"silent, notify, memory_update or chain_next." enum:"silent,notify,memory_update,chain_next"`
	Schedule          string `yaml:"schedule" json:"schedule,omitempty" doc:"chain_next: id or name of the schedule to run next."`
	ContextFromResult bool   `yaml:"context_from_result" json:"context_from_result,omitempty" doc:"chain_next: pass this run's output inside <previous_task_output>."`
	Issue             int    `yaml:"issue" json:"issue,omitempty" doc:"notify: GitHub issue number to comment on."`
	Webhook           string `yaml:"webhook" json:"webhook,omitempty" doc:"notify: URL to POST the result to."`
}

// UnmarshalYAML accepts the short form `result_route: notify`. The long form
// is decoded by the strict loader, which calls this only for scalars.
func (r *ResultRoute) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("result_route must be a route name or a mapping")
	}
	r.Type = n.Value
	return nil
}

// DeriveID is the stable id of a schedule that has none: a hash of tenant and
// name, so renaming the file or reordering documents keeps the id.
func DeriveID(tenant, name string) string {
	sum := sha256.Sum256([]byte(tenant + "/" + name))
	return "sch_" + hex.EncodeToString(sum[:4])
}

// Triggered reports whether the schedule has a time-based trigger.
func (s *Schedule) Triggered() bool { return s.Spec != nil }
