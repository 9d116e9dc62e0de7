package model

import (
	"github.com/astra-gitops/astra/internal/money"
)

// Tool kinds.
const (
	KindExec    = "exec"
	KindHTTP    = "http"
	KindBuiltin = "builtin"
	KindGitHub  = "github"
)

// Policies is everything under policies/*.yaml, merged across files.
type Policies struct {
	// Meta.Keys holds where merged entries were written, keyed
	// "<section>.<name>": roles.founder, permissions.approve,
	// identities.<email>.
	Meta         Meta                 `yaml:"-" json:"-"`
	Tools        map[string]*Tool     `yaml:"tools" json:"tools" doc:"Tool catalog, keyed by tool name."`
	TaskPolicies []*TaskPolicy        `yaml:"task_policies" json:"task_policies" doc:"Per task type (tool) auto-execute rules, with tenant overrides."`
	Actors       []*Actor             `yaml:"actors" json:"actors"`
	Budget       GlobalBudget         `yaml:"budget" json:"budget"`
	Approvers    map[string][]string  `yaml:"approvers" json:"approvers" doc:"Older name of roles, still accepted; once loaded it holds the same roles as roles."`
	Roles        map[string][]string  `yaml:"roles" json:"roles" doc:"Role name to GitHub logins or @org/team slugs."`
	Permissions  map[string][]string  `yaml:"permissions" json:"permissions" doc:"Verb (approve, reject, resume, dead_letter_retry, memory_purge, run, trigger, rollback, init_force, correct_clock, trust_resume, migrate, backfill, pause, cancel) to the roles allowed; a verb left out takes approve's roles."`
	Identities   map[string]string    `yaml:"identities" json:"identities" doc:"git config user.email to GitHub login, for commands run outside CI."`
	Issuers      []*Issuer            `yaml:"issuers" json:"issuers" doc:"OIDC issuers whose JWTs may trigger events."`
	Trust        Trust                `yaml:"trust" json:"trust" doc:"What the repository's trust rests on: the ledger key, its GitHub environment, an accepted risk."`
	Calendars    map[string]Calendar  `yaml:"calendars" json:"calendars,omitempty" doc:"Exclusion calendars a schedule names in exclude: each a list of dates (2026-12-25) and iCalendar files in the repository (calendars/freeze.ics)."`
	Defaults     ScheduleDefaults     `yaml:"defaults" json:"defaults" doc:"Repository-wide values of timezone, actor, budget, retry and catchup for schedules (and their templates) that leave them out, and cancel_poll."`
	Templates    map[string]*Template `yaml:"templates" json:"templates,omitempty" doc:"Reusable partial schedules, keyed by name; a schedule says extends: <name> and its own keys win."`
	SigningKeys  map[string][]string  `yaml:"signing_keys" json:"signing_keys,omitempty" doc:"GitHub login to the SSH public keys its local approvals are signed with (astra approve signs with ssh-keygen)."`
}

// Tool is one entry of the tool catalog (what each tool is and may do, plus how to run it).
type Tool struct {
	Meta  Meta   `yaml:"-" json:"-"`
	Name  string `yaml:"-" json:"name"`
	Input Input  `yaml:"-" json:"-"` // compiled input_schema

	Kind               string            `yaml:"kind" json:"kind" doc:"How the tool runs." enum:"exec,http,builtin,github" required:"true"`
	Description        string            `yaml:"description" json:"description,omitempty"`
	Command            []string          `yaml:"command" json:"command,omitempty" doc:"exec: argv, run from the repository root; never a shell string."`
	Env                []string          `yaml:"env" json:"env,omitempty" doc:"exec: environment variables passed through besides PATH, HOME, LANG, TMPDIR, TZ."`
	URL                string            `yaml:"url" json:"url,omitempty" doc:"http: webhook URL."`
	Method             string            `yaml:"method" json:"method,omitempty" doc:"http: method (default POST)."`
	Headers            map[string]string `yaml:"headers" json:"headers,omitempty"`
	SignatureSecretEnv string            `yaml:"signature_secret_env" json:"signature_secret_env,omitempty" doc:"http: env var holding the HMAC-SHA256 key for X-Astra-Signature."`
	Action             string            `yaml:"action" json:"action,omitempty" doc:"github: what to do." enum:"issue_comment,create_issue,repository_dispatch"`
	Tier               Tier              `yaml:"tier" json:"tier" doc:"Lowest safety tier a schedule using this tool may have (required except for builtins)."`
	Capabilities       []string          `yaml:"capabilities" json:"capabilities" doc:"Dot-notation capabilities the actor's scopes must grant."`
	RequiresApproval   bool              `yaml:"requires_approval" json:"requires_approval,omitempty"`
	DryRunSupported    bool              `yaml:"dry_run_supported" json:"dry_run_supported,omitempty" doc:"Run it with ASTRA_DRY_RUN=1 in dry runs instead of only describing it."`
	Idempotent         bool              `yaml:"idempotent" json:"idempotent,omitempty" doc:"Safe to retry with the same input. false (written): a failed run is not retried automatically unless its schedule sets retry_non_idempotent; it goes to the dead letter."`
	RiskLevel          Risk              `yaml:"risk_level" json:"risk_level" doc:"low, medium or high; high: every run needs an approval, whatever the schedule's tier."`
	Rollback           []string          `yaml:"rollback" json:"rollback,omitempty" doc:"argv of a compensating command for 'astra rollback'."`
	RunsOn             Labels            `yaml:"runs_on" json:"runs_on,omitempty" doc:"astra plan: GitHub Actions runner label(s) of the jobs that run this tool, unless the schedule names its own."`
	Files              []string          `yaml:"files" json:"files,omitempty" doc:"exec: repository files the tool loads besides the ones its command names (libraries it sources, modules, a Makefile), as globs such as lib/deploy/**. Without it, approvals bind the whole directory of each script the command names; with it, those scripts and these globs. Either way no other tool may change them."`
	InputSchema        any               `yaml:"input_schema" json:"input_schema,omitempty" doc:"JSON Schema (draft 2020-12 unless $schema says otherwise) of the tool's payload: inline, or the path of a .json file in the repository. validate checks every schedule's payload against it; a run whose payload or event does not match is refused."`
	Writes             []string          `yaml:"writes" json:"writes,omitempty" doc:"exec: repository paths the tool writes, as globs such as reports/** (* within a path segment, ** across); what it changes there is committed with its run, anything else it changes is put back before the next tool runs and reported. Never astra's files, workflows, CODEOWNERS, files tools run or paths CODEOWNERS gives owners."`
}

// Input checks a JSON value against the tool's input_schema; nil when it
// declares none. The configuration loader sets it.
type Input interface {
	Check(doc any) error
	CheckJSON(doc []byte) error
}

// NonIdempotent reports whether the tool declares idempotent: false: a
// failed run is not retried automatically (Schedule.RetryNonIdempotent).
// A tool that leaves idempotent out is retried as any other.
func (t *Tool) NonIdempotent() bool { return t.Meta.Has("idempotent") && !t.Idempotent }

// ChecksPayload reports whether runs of s hand their tool a payload its
// input_schema must accept: any schedule except one run only by events
// and written without a payload, whose tool's input is the event.
func ChecksPayload(s *Schedule) bool {
	return s.Meta.Has("payload") || s.OnEvent == "" || s.Triggered() || s.RunImmediately
}

// PayloadOf is the payload runs of s hand their tool: {} when it has none.
func PayloadOf(s *Schedule) any {
	if s.Payload == nil {
		return map[string]any{}
	}
	return s.Payload
}

// Declares reports whether the tool declares that it writes path (a slash
// path relative to the repository root).
func (t *Tool) Declares(path string) bool {
	for _, g := range t.Writes {
		if Glob(g, path) {
			return true
		}
	}
	return false
}

// TaskPolicy decides whether a task type may run without approval.
// The task type is the tool name; tenant policies override global ones.
type TaskPolicy struct {
	Meta         Meta   `yaml:"-" json:"-"`
	TaskType     string `yaml:"task_type" json:"task_type" required:"true"`
	Tenant       string `yaml:"tenant" json:"tenant,omitempty" doc:"Empty for the global policy."`
	AutoExecute  bool   `yaml:"auto_execute" json:"auto_execute" doc:"false: every run needs an approval (default true)."`
	MaxRiskLevel Risk   `yaml:"max_risk_level" json:"max_risk_level,omitempty" doc:"Tools riskier than this need an approval."`
	ApproverRole string `yaml:"approver_role" json:"approver_role,omitempty" doc:"Role (under roles:) whose members may approve this task type, instead of permissions.approve."`
	Approvals    int    `yaml:"approvals_required" json:"approvals_required,omitempty" minimum:"1" doc:"Distinct approvers of the approver role an approval of this task type needs (default 1)."`
	Description  string `yaml:"description" json:"description,omitempty"`
}

// Actor is who a run acts as.
type Actor struct {
	Meta      Meta      `yaml:"-" json:"-"`
	Pattern   string    `yaml:"actor" json:"actor" doc:"Actor id or glob pattern such as n8n_workflow_*." required:"true"`
	Scopes    []string  `yaml:"scopes" json:"scopes" doc:"Granted capabilities: exact, prefix.* or *."`
	RateLimit RateLimit `yaml:"rate_limit" json:"rate_limit"`
	Autonomy  Autonomy  `yaml:"autonomy" json:"autonomy" doc:"Default autonomy level (default L2)."`
	AllowedIn []string  `yaml:"allowed_in" json:"allowed_in,omitempty" doc:"Schedule files that may use this actor, as globs such as schedules/ops/** (default: any)."`
	ToolAllow []string  `yaml:"tool_allow" json:"tool_allow,omitempty" doc:"Globs of tool names and capabilities runs acting as this actor may use; narrows a schedule's tool_allow, never widens it."`
	ToolDeny  []string  `yaml:"tool_deny" json:"tool_deny,omitempty" doc:"Globs of tool names and capabilities runs acting as this actor may not use, added to the schedule's tool_deny."`
}

// RateLimit bounds how many runs an actor starts.
type RateLimit struct {
	Meta      Meta `yaml:"-" json:"-"`
	PerMinute int  `yaml:"per_minute" json:"per_minute" minimum:"0" doc:"Runs per minute (default 60)."`
	PerHour   int  `yaml:"per_hour" json:"per_hour,omitempty" minimum:"0" doc:"Runs per hour (0 = no hourly limit)."`
}

// GlobalBudget is the spend ceiling across all schedules.
type GlobalBudget struct {
	Meta            Meta       `yaml:"-" json:"-"`
	DailyLimit      money.USD  `yaml:"daily_limit_usd" json:"daily_limit_usd" doc:"Default 5.00."`
	MonthlyLimit    money.USD  `yaml:"monthly_limit_usd" json:"monthly_limit_usd" doc:"Default 50.00."`
	AlertThresholds []float64  `yaml:"alert_thresholds" json:"alert_thresholds" doc:"Fractions of a limit that raise budget.warning (default 0.5, 0.8, 0.9)."`
	OnLimitReached  string     `yaml:"on_limit_reached" json:"on_limit_reached" enum:"pause-all,pause-non-critical,alert-only" doc:"Default pause-all."`
	Pricing         Pricing    `yaml:"pricing" json:"pricing,omitzero" doc:"Prices of tokens, for tools that report tokens without a cost."`
	AlertRoute      AlertRoute `yaml:"alert_route" json:"alert_route,omitzero" doc:"Where budget alerts reach people besides the log, job summary and dashboard: each threshold and each pause once per period, and usage a run reported past its bounds."`
}

// AlertRoute sends the global budget's alerts to people, like a notify
// result route: a comment on a GitHub issue (once per alert, whichever
// runner raised it), a POST to a webhook (signed with ASTRA_WEBHOOK_SECRET
// when set), or both.
type AlertRoute struct {
	Meta    Meta   `yaml:"-" json:"-"`
	Issue   int    `yaml:"issue" json:"issue,omitempty" doc:"GitHub issue number to comment on."`
	Webhook string `yaml:"webhook" json:"webhook,omitempty" doc:"URL to POST each alert to, as JSON."`
}

// Pricing turns tokens a tool reports without a cost_usd into dollars: the
// rate of the model its usage line names, else of the tool. A cost the tool
// reports itself wins.
type Pricing struct {
	Meta   Meta             `yaml:"-" json:"-"`
	Models map[string]*Rate `yaml:"models" json:"models,omitempty" doc:"Rates by the model a usage line names (\"model\":\"...\")."`
	Tools  map[string]*Rate `yaml:"tools" json:"tools,omitempty" doc:"Rates by tool name, for usage lines that name no model or one not listed."`
}

// Rate is the price of a thousand tokens.
type Rate struct {
	Meta   Meta      `yaml:"-" json:"-"`
	Input  money.USD `yaml:"input_per_1k" json:"input_per_1k" doc:"USD per 1,000 input tokens."`
	Output money.USD `yaml:"output_per_1k" json:"output_per_1k" doc:"USD per 1,000 output tokens; tokens reported without the split are priced at the higher of the two rates."`
}

// Rate is the rate of a usage line of tool that names model: the model's,
// else the tool's; nil when neither is priced.
func (p *Pricing) Rate(tool, model string) *Rate {
	if p == nil {
		return nil
	}
	if r := p.Models[model]; model != "" && r != nil {
		return r
	}
	return p.Tools[tool]
}

// Cost is what tokens cost at r: input and output at their rates, tokens
// reported without the split at the higher rate; rounded up, saturating.
func (r *Rate) Cost(input, output, unsplit int64) money.USD {
	return r.Input.PerThousand(input).Add(r.Output.PerThousand(output)).Add(max(r.Input, r.Output).PerThousand(unsplit))
}

// On-limit actions.
const (
	PauseAll         = "pause-all"
	PauseNonCritical = "pause-non-critical"
	AlertOnly        = "alert-only"
)

// Config is the whole repository configuration.
type Config struct {
	Schedules []*Schedule
	Policies  Policies
}

// Schedule finds a schedule by id, or by name when the name is unique.
func (c *Config) Schedule(ref string) *Schedule {
	var byName *Schedule
	n := 0
	for _, s := range c.Schedules {
		if s.ID == ref {
			return s
		}
		if s.Name == ref {
			byName = s
			n++
		}
	}
	if n == 1 {
		return byName
	}
	return nil
}

// Ref is what names s to commands and in hints: its name when no other
// schedule has it (in any tenant), else its id, so a hint can be pasted as is.
func (c *Config) Ref(s *Schedule) string {
	if c.Schedule(s.Name) == s {
		return s.Name
	}
	return s.ID
}

// Tenants is how many tenants the schedules belong to ("" counts as one).
func (c *Config) Tenants() int {
	seen := map[string]bool{}
	for _, s := range c.Schedules {
		seen[s.Tenant] = true
	}
	return len(seen)
}
