package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/repofs"
)

var (
	capabilityRe = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)
	scopeRe      = regexp.MustCompile(`^(\*|[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?)$`)
	idRe         = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	eventRe      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/-]*$`)
	loginRe      = regexp.MustCompile(`^(@[A-Za-z0-9-]+/[A-Za-z0-9_.-]+|[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))$`)
)

const (
	limitHint       = "limits keep every run bounded; see Limits in the README"
	minIntervalHint = "CI cron starts a run every few minutes at best; a finer interval only piles up slots"
)

// validate checks the loaded configuration. Without policies (see
// checkDirs), schedules' tools and actors are not looked up one by one.
func validate(root string, cfg *model.Config, policies bool, diags *diag.List) {
	p := &cfg.Policies
	validateTools(root, p, diags)
	validateToolReach(root, cfg, diags)
	validatePolicies(cfg, diags)
	validateIdentity(cfg, diags)
	validateTrust(cfg, diags)
	ids := map[string]*model.Schedule{}
	for _, s := range cfg.Schedules {
		validateSchedule(cfg, s, policies, diags)
		if s.ID == "" {
			continue
		}
		if prev, ok := ids[s.ID]; ok {
			hint := "give each schedule its own id (or a unique name within its tenant)"
			diags.Errorf(s.Meta.At("id"), hint, "schedule id %q is already used at %s", s.ID, prev.Meta.Pos)
			continue
		}
		ids[s.ID] = s
	}
	validateChains(cfg, diags)
	validateChainTools(cfg, diags)
}

// validateSchedule checks one schedule, concern by concern, in the order
// its problems are reported.
func validateSchedule(cfg *model.Config, s *model.Schedule, policies bool, diags *diag.List) {
	validateScheduleNaming(s, diags)
	validateScheduleTrigger(s, diags)
	validateSchedulePriority(s, diags)
	validateDailyBudget(s, diags)
	tool := validateTargetTool(&cfg.Policies, s, policies, diags)
	validateActor(&cfg.Policies, s, tool, policies, diags)
	validateScheduleTools(&cfg.Policies, s, tool, diags)
	validatePayload(s, tool, diags)
	if s.RetryNonIdem && tool != nil && !tool.NonIdempotent() {
		diags.Warnf(s.Meta.At("retry_non_idempotent"), "leave it out", "retry_non_idempotent has no effect: tool %q does not declare idempotent: false", tool.Name)
	}
	validateCatchup(s.Catchup, diags)
	validateRunBudget(s.Budget, diags)
	validateRetry(s.Retry, diags)
	validateRecall(s.Recall, diags)
	if s.ApprovalTTL.D() <= 0 {
		diags.Errorf(s.Meta.At("approval_ttl"), "", "approval_ttl must be positive")
	}
	if s.Meta.Has("approvals_required") && s.ApprovalsReq < 1 {
		diags.Errorf(s.Meta.At("approvals_required"), "leave it out for one approver", "approvals_required must be at least 1")
	}
	validateLabels(s.RunsOn, s.Meta, diags)
	validateRoute(cfg, s, diags)
}

// validateScheduleNaming checks that a schedule is named and its id usable.
func validateScheduleNaming(s *model.Schedule, diags *diag.List) {
	m := s.Meta
	if s.Name == "" {
		diags.Errorf(m.Pos, "add `name: <something>`", "schedule has no name")
	}
	if s.ID != "" && !idRe.MatchString(s.ID) {
		diags.Errorf(m.At("id"), "use letters, digits, _ . - (at most 64)", "schedule id %q is not a valid id", s.ID)
	}
}

// validateScheduleTrigger checks that a schedule has a trigger, that its
// event name is usable and that it fires no more often than CI can start
// runs. resolveTrigger already reported what does not parse.
func validateScheduleTrigger(s *model.Schedule, diags *diag.List) {
	m := s.Meta
	if s.Spec == nil && s.OnEvent == "" && !s.RunImmediately && !m.Has("cron") && !m.Has("frequency") && !m.Has("interval") && !m.Has("at") {
		diags.Errorf(m.Pos, "add cron, frequency, interval, at, on_event or run_immediately", "schedule %q has no trigger", s.Name)
	}
	if s.OnEvent != "" && !eventRe.MatchString(s.OnEvent) {
		diags.Errorf(m.At("on_event"), "use letters, digits and _ . : / -", "invalid event name %q", s.OnEvent)
	}
	validateMinInterval(s, diags)
}

// validateMinInterval refuses an interval or @every finer than
// model.MinInterval.
func validateMinInterval(s *model.Schedule, diags *diag.List) {
	m := s.Meta
	if m.Has("interval") && s.Interval.D() <= 0 {
		diags.Errorf(m.At("interval"), "", "interval must be positive")
	} else if m.Has("interval") && s.Interval.D() < model.MinInterval {
		diags.Errorf(m.At("interval"), minIntervalHint, "interval %s is below the minimum interval of %s", short(s.Interval.D()), short(model.MinInterval))
	}
	if every, ok := strings.CutPrefix(strings.TrimSpace(s.Cron), "@every"); ok && s.Spec != nil {
		if d, err := time.ParseDuration(strings.TrimSpace(every)); err == nil && d < model.MinInterval {
			diags.Errorf(m.At("cron"), minIntervalHint, "@every %s is below the minimum interval of %s", short(d), short(model.MinInterval))
		}
	}
}

func validateSchedulePriority(s *model.Schedule, diags *diag.List) {
	if s.Priority < 0 || s.Priority > 9 {
		diags.Errorf(s.Meta.At("priority"), "9 runs first, 0 last", "priority %d is out of range 0-9", s.Priority)
	}
}

// validateDailyBudget checks per_day_budget against the schedule's tier:
// tier 1 needs one, tier 0 ignores it.
func validateDailyBudget(s *model.Schedule, diags *diag.List) {
	at := s.Meta.At("per_day_budget")
	if s.PerDayBudget < 0 {
		diags.Errorf(at, "", "per_day_budget must not be negative")
	}
	if s.SafetyTier == model.TierLocalWrite && s.PerDayBudget == 0 {
		diags.Errorf(at, "omit it for the default of 4", "a tier-1 schedule needs a per_day_budget of at least 1")
	}
	if s.SafetyTier == model.TierReadOnly && s.PerDayBudget > 0 {
		diags.Warnf(at, "remove it", "per_day_budget has no effect on tier 0: tier 0 has no per-day run count (its spend still counts against the global budget)")
	}
}

// validateTargetTool checks the schedule's target_tool and that the
// schedule is no laxer than it, and returns the tool (nil when unknown).
// Without policies an unknown tool is not reported.
func validateTargetTool(p *model.Policies, s *model.Schedule, policies bool, diags *diag.List) *model.Tool {
	m := s.Meta
	tool := p.Tools[s.TargetTool]
	switch {
	case s.TargetTool == "":
		diags.Errorf(m.Pos, "add `target_tool: <tool name from policies/>`", "schedule %q has no target_tool", s.Name)
	case tool == nil:
		if policies {
			diags.Errorf(m.At("target_tool"), suggest(s.TargetTool, toolNames(p), "tools"), "unknown tool %q", s.TargetTool)
		}
	case s.SafetyTier < tool.Tier:
		diags.Errorf(m.At("safety_tier"), "a schedule may only be stricter than its tool",
			"safety_tier %d (%s) is below tool %q's tier %d (%s)", s.SafetyTier, s.SafetyTier, tool.Name, tool.Tier, tool.Tier)
	}
	return tool
}

// validateActor checks that the schedule's actor exists and may use the
// tool (nil: unknown, already reported), and that someone may approve
// what the two can need approved. Without policies an unknown actor is
// not reported.
func validateActor(p *model.Policies, s *model.Schedule, tool *model.Tool, policies bool, diags *diag.List) {
	m := s.Meta
	actor := p.Actor(s.Actor)
	if actor == nil {
		if policies {
			diags.Errorf(m.At("actor"), "add it (or a matching pattern) under actors: in policies/", "actor %q matches no actor in policies", s.Actor)
		}
		return
	}
	if tool == nil {
		return
	}
	if miss := model.Missing(actor.Scopes, tool.Capabilities); len(miss) > 0 {
		diags.Errorf(m.At("actor"), fmt.Sprintf("grant them in the scopes of actor %q, or use another actor", actor.Pattern),
			"actor %q lacks scope for tool %q capabilities %s", s.Actor, tool.Name, strings.Join(miss, ", "))
	}
	validateApprovers(p, s, tool, diags) // after the actor: its autonomy counts
}

// validateCatchup checks the catch-up policy and its bounds.
func validateCatchup(c model.Catchup, diags *diag.List) {
	if !slices.Contains([]string{model.CatchupLatest, model.CatchupAll, model.CatchupSkip}, c.Policy) {
		diags.Errorf(c.Meta.At("policy"), "use latest, all or skip", "unknown catch-up policy %q", c.Policy)
	}
	if c.Window.D() <= 0 {
		diags.Errorf(c.Meta.At("window"), "", "catch-up window must be positive")
	} else if c.Window.D() > model.MaxCatchupWindow {
		diags.Errorf(c.Meta.At("window"), limitHint, "catchup.window %s is above its limit of %s (%d days)",
			short(c.Window.D()), short(model.MaxCatchupWindow), model.MaxCatchupWindow/(24*time.Hour))
	}
	if c.Max < 1 {
		diags.Errorf(c.Meta.At("max"), "", "catchup.max must be at least 1")
	} else if c.Max > model.MaxCatchupMax {
		diags.Errorf(c.Meta.At("max"), limitHint, "catchup.max %d is above its limit of %d slots per run", c.Max, model.MaxCatchupMax)
	}
}

// validateRunBudget checks the limits of one run.
func validateRunBudget(b model.TaskBudget, diags *diag.List) {
	if b.MaxTokens < 0 || b.MaxCost < 0 || b.MaxToolCalls < 0 {
		diags.Errorf(b.Meta.Pos, "", "budget limits must not be negative")
	}
	if b.MaxWallClock.D() <= 0 {
		diags.Errorf(b.Meta.At("max_wall_clock"), "", "max_wall_clock must be positive")
	}
}

func validateRetry(r model.Retry, diags *diag.List) {
	if r.MaxAttempts < 1 {
		diags.Errorf(r.Meta.At("max_attempts"), "1 means no retry", "retry.max_attempts must be at least 1")
	}
	if r.BackoffMax < r.BackoffBase {
		diags.Errorf(r.Meta.At("backoff_max"), "", "retry.backoff_max is below backoff_base")
	}
}

func validateRecall(rc *model.Recall, diags *diag.List) {
	if rc != nil && (rc.MaxTokens < 0 || rc.MaxEntries < 0) {
		diags.Errorf(rc.Meta.Pos, "0 takes the task type's default", "recall budgets must not be negative")
	}
}

// validateLabels checks runner labels (runs_on): plain names that a
// workflow can use as they are.
func validateLabels(labels model.Labels, m model.Meta, diags *diag.List) {
	at := m.At("runs_on")
	if m.Has("runs_on") && len(labels) == 0 {
		diags.Errorf(at, "name a runner label, or leave runs_on out for the default", "runs_on is empty")
	}
	for _, l := range labels {
		if !model.ValidLabel(l) {
			diags.Errorf(at, "use a runner label such as ubuntu-latest or self-hosted: letters, digits, _ . - (at most 100)", "invalid runner label %q", l)
		}
	}
}

// validateRoute checks the result route's type, the options of its type,
// and that it sets no option of another type.
func validateRoute(cfg *model.Config, s *model.Schedule, diags *diag.List) {
	r := s.ResultRoute
	at := s.Meta.At("result_route")
	switch r.Type {
	case model.RouteSilent, model.RouteMemoryUpdate:
	case model.RouteNotify:
		validateNotifyRoute(r, diags)
	case model.RouteChainNext:
		validateChainRoute(cfg, r, at, diags)
	default:
		diags.Errorf(r.Meta.At("type"), "use silent, notify, memory_update or chain_next", "unknown result route %q", r.Type)
		return
	}
	if r.Type != model.RouteChainNext && (r.Schedule != "" || r.ContextFromResult) {
		diags.Errorf(at, "", "schedule and context_from_result only apply to chain_next")
	}
	if r.Type != model.RouteNotify && (r.Issue != 0 || r.Webhook != "") {
		diags.Errorf(at, "", "issue and webhook only apply to notify")
	}
}

func validateNotifyRoute(r model.ResultRoute, diags *diag.List) {
	if r.Webhook != "" {
		if u, err := url.Parse(r.Webhook); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			diags.Errorf(r.Meta.At("webhook"), "use an absolute http(s) URL", "invalid webhook URL %q", r.Webhook)
		}
	}
	if r.Issue < 0 {
		diags.Errorf(r.Meta.At("issue"), "", "issue number must be positive")
	}
}

// validateChainRoute checks that chain_next names a schedule (at: the
// route, for when it names none). Cycles and depth are validateChains'.
func validateChainRoute(cfg *model.Config, r model.ResultRoute, at diag.Pos, diags *diag.List) {
	if r.Schedule == "" {
		diags.Errorf(at, "add `schedule: <id or name>`", "chain_next needs the schedule to run next")
	} else if cfg.Schedule(r.Schedule) == nil {
		diags.Errorf(r.Meta.At("schedule"), suggest(r.Schedule, scheduleRefs(cfg), "schedules"), "chain_next target %q is not a schedule", r.Schedule)
	}
}

// validateChains rejects chain_next cycles and chains longer than the bound.
func validateChains(cfg *model.Config, diags *diag.List) {
	for _, s := range cfg.Schedules {
		seen := []string{s.ID}
		cur := s
		for cur.ResultRoute.Type == model.RouteChainNext {
			next := cfg.Schedule(cur.ResultRoute.Schedule)
			if next == nil {
				break
			}
			if slices.Contains(seen, next.ID) {
				if next == s {
					diags.Errorf(s.ResultRoute.Meta.At("schedule"), "break the loop: one of them must end with another route",
						"chain_next forms a cycle: %s", strings.Join(append(seen, next.ID), " -> "))
				}
				break
			}
			seen = append(seen, next.ID)
			if len(seen) > model.MaxChainDepth {
				diags.Errorf(s.ResultRoute.Meta.At("schedule"), "", "chain starting at %q is longer than %d steps", s.ID, model.MaxChainDepth)
				break
			}
			cur = next
		}
	}
}

func validateTools(root string, p *model.Policies, diags *diag.List) {
	builtins := model.BuiltinTools()
	for _, name := range toolNames(p) {
		validateTool(root, name, p.Tools[name], builtins, diags)
	}
}

// validateTool checks one tool of the catalog, concern by concern, in the
// order its problems are reported.
func validateTool(root, name string, t *model.Tool, builtins map[string]*model.Tool, diags *diag.List) {
	m := t.Meta
	if !capabilityRe.MatchString(name) && !idRe.MatchString(name) {
		diags.Errorf(m.Pos, "use letters, digits, _ . -", "invalid tool name %q", name)
	}
	validateToolKind(root, name, t, builtins, diags)
	if t.Kind != model.KindBuiltin && !m.Has("tier") {
		diags.Errorf(m.Pos, "add tier: 0 (read_only), 1 (local_write) or 2 (external)", "tool %q has no tier", name)
	}
	for _, c := range t.Capabilities {
		if !capabilityRe.MatchString(c) {
			diags.Errorf(m.At("capabilities"), "use dot-notation such as github.issues.create", "invalid capability %q", c)
		}
	}
	validateRollback(root, t, diags)
	compileInputSchema(root, t, diags)
	validateExecOnly(t, diags)
	validateToolEnv(t, diags)
	for _, g := range t.Writes {
		if msg := checkWrites(g); msg != "" {
			diags.Errorf(m.At("writes"), "declare paths inside the repository that astra does not manage, such as reports/**", "writes pattern %q %s", g, msg)
		}
	}
	for _, g := range t.Files {
		if msg := checkWrites(g); msg != "" {
			diags.Errorf(m.At("files"), "name files of the repository that the tool loads, such as lib/deploy/**", "files pattern %q %s", g, msg)
		}
	}
	if t.Kind != model.KindHTTP && (t.URL != "" || t.SignatureSecretEnv != "" || len(t.Headers) > 0) {
		diags.Errorf(m.At("url"), "", "url, headers and signature_secret_env only apply to http tools")
	}
	validateLabels(t.RunsOn, m, diags)
}

// validateToolKind checks a tool's kind and what that kind requires.
func validateToolKind(root, name string, t *model.Tool, builtins map[string]*model.Tool, diags *diag.List) {
	m := t.Meta
	switch t.Kind {
	case model.KindExec:
		validateExecCommand(root, name, t.Command, m, diags)
	case model.KindHTTP:
		if u, err := url.Parse(t.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			diags.Errorf(m.At("url"), "use an absolute http(s) URL", "http tool %q has invalid url %q", name, t.URL)
		}
	case model.KindBuiltin:
		if builtins[name] == nil {
			diags.Errorf(m.Pos, "builtin tools are tasks_list, tasks_by_trace, tasks_last_failed and budget", "%q is not a builtin tool", name)
		}
	case model.KindGitHub:
		if !slices.Contains([]string{"issue_comment", "create_issue", "repository_dispatch"}, t.Action) {
			diags.Errorf(m.At("action"), "use issue_comment, create_issue or repository_dispatch", "github tool %q has unknown action %q", name, t.Action)
		}
	case "":
		diags.Errorf(m.Pos, "add kind: exec, http, builtin or github", "tool %q has no kind", name)
	default:
		diags.Errorf(m.At("kind"), "use exec, http, builtin or github", "tool %q has unknown kind %q", name, t.Kind)
	}
}

// validateExecCommand checks an exec tool's argv: present, a real file
// when it is a repository path, and not a shell string.
func validateExecCommand(root, name string, argv []string, m model.Meta, diags *diag.List) {
	if len(argv) == 0 || argv[0] == "" {
		diags.Errorf(m.At("command"), "write the argv as a list, e.g. [./scripts/deploy.sh, --prod]", "exec tool %q has no command", name)
	} else {
		validateRepoCommand(root, argv[0], m.At("command"), diags)
	}
	if len(argv) == 1 && strings.ContainsAny(argv[0], " |;&$") {
		diags.Errorf(m.At("command"), "split it into a list of arguments; astra never runs a shell", "command %q looks like a shell string", argv[0])
	}
}

func validateRollback(root string, t *model.Tool, diags *diag.List) {
	m := t.Meta
	if m.Has("rollback") && len(t.Rollback) == 0 {
		diags.Errorf(m.At("rollback"), "", "rollback must be a non-empty argv list")
	} else if len(t.Rollback) > 0 {
		validateRepoCommand(root, t.Rollback[0], m.At("rollback"), diags)
	}
}

// validateExecOnly rejects the fields only an exec tool has on a tool of
// another kind.
func validateExecOnly(t *model.Tool, diags *diag.List) {
	if t.Kind == model.KindExec {
		return
	}
	if len(t.Command) > 0 || len(t.Env) > 0 {
		diags.Errorf(t.Meta.At("command"), "", "command and env only apply to exec tools")
	}
	if len(t.Writes) > 0 {
		diags.Errorf(t.Meta.At("writes"), "", "writes only applies to exec tools")
	}
	if len(t.Files) > 0 {
		diags.Errorf(t.Meta.At("files"), "", "files only applies to exec tools")
	}
}

// ledgerKeyEnv are the variables that hold the ledger key (package
// ledgerkey): whoever holds it can rewrite the ledger, so no tool gets it.
var ledgerKeyEnv = []string{"ASTRA_LEDGER_KEY", "ASTRA_LEDGER_KEY_FILE"}

// validateToolEnv refuses a tool env list that names the ledger key.
func validateToolEnv(t *model.Tool, diags *diag.List) {
	for _, name := range t.Env {
		if slices.Contains(ledgerKeyEnv, name) {
			diags.Errorf(t.Meta.At("env"), "remove it: tools never get the ledger key", "env names %s, the ledger key", name)
		}
	}
}

// Paths no tool may declare it writes: astra's own state, git, and what
// decides what runs. A pattern whose first segment can name one of them
// could reach into it.
var (
	reservedDirs  = []string{"var", ".git", SchedulesDir, PoliciesDir}
	reservedFiles = []string{".astra.yaml"}
)

// checkWrites says what is wrong with a writes pattern, "" when nothing.
func checkWrites(g string) string {
	segs := strings.Split(g, "/")
	switch {
	case g == "":
		return "is empty"
	case !model.ValidGlob(g):
		return "is not a valid glob"
	case path.IsAbs(g) || slices.Contains(segs, ".."):
		return "escapes the repository"
	case path.Clean(g) != g || slices.Contains(segs, "."):
		return "is not written as a clean path (no ./, // or trailing /)"
	case segs[0] == "**":
		return "matches every path, astra's own var/ included"
	}
	for _, d := range reservedDirs {
		if ok, _ := path.Match(segs[0], d); ok && len(segs) > 1 {
			return "reaches into " + d + "/, which astra manages"
		}
	}
	for _, f := range reservedFiles {
		if ok, _ := path.Match(segs[0], f); ok && len(segs) == 1 {
			return "matches " + f + ", which astra manages"
		}
	}
	return ""
}

// validateRepoCommand checks a command that is a repository path (it has a
// slash and is not absolute): it must be a regular file inside the
// repository, whatever symlinks lead to it.
func validateRepoCommand(root, c string, at diag.Pos, diags *diag.List) {
	if !strings.Contains(c, "/") || filepath.IsAbs(c) {
		return
	}
	_, err := repofs.Stat(root, filepath.Clean(c))
	var refused *repofs.Error
	switch {
	case errors.As(err, &refused):
		diags.Errorf(at, "a tool that is a repository path must be a regular file inside the repository", "command %v", err)
	case err != nil:
		diags.Warnf(at, "commands run from the repository root", "command %q does not exist", c)
	}
}

func validatePolicies(cfg *model.Config, diags *diag.List) {
	p := &cfg.Policies
	tenants := map[string]bool{}
	for _, s := range cfg.Schedules {
		tenants[s.Tenant] = true
	}
	for _, tp := range p.TaskPolicies {
		validateTaskPolicy(p, tp, tenants, diags)
	}
	for _, a := range p.Actors {
		validateActorEntry(a, diags)
	}
	validateGlobalBudget(p.Budget, diags)
	validatePricing(p, diags)
	if d := p.Defaults.CancelPoll.D(); d > 0 && d < time.Second {
		// Each look is a fetch of astra's branch from the remote.
		diags.Errorf(p.Defaults.Meta.At("cancel_poll"), "0 turns it off; 30s is the default", "cancel_poll must be at least 1s, or 0")
	}
}

// validateTaskPolicy checks what a task policy refers to: its tool, its
// tenant (tenants are the schedules' tenants) and its approver role.
func validateTaskPolicy(p *model.Policies, tp *model.TaskPolicy, tenants map[string]bool, diags *diag.List) {
	m := tp.Meta
	if tp.TaskType == "" {
		diags.Errorf(m.Pos, "task_type is the tool name the policy governs", "task policy has no task_type")
	} else if p.Tools[tp.TaskType] == nil {
		diags.Warnf(m.At("task_type"), suggest(tp.TaskType, toolNames(p), "tools"), "task policy for %q matches no tool", tp.TaskType)
	}
	if tp.Tenant != "" && !tenants[tp.Tenant] {
		diags.Warnf(m.At("tenant"), "", "no schedule belongs to tenant %q", tp.Tenant)
	}
	if _, ok := p.Roles[tp.ApproverRole]; tp.ApproverRole != "" && !ok {
		diags.Errorf(m.At("approver_role"), "define it under roles:", "approver role %q is not defined", tp.ApproverRole)
	}
	if m.Has("approvals_required") && tp.Approvals < 1 {
		diags.Errorf(m.At("approvals_required"), "leave it out for one approver", "approvals_required must be at least 1")
	}
}

// validateActorEntry checks one entry of actors: its pattern, scopes and
// rate limits.
func validateActorEntry(a *model.Actor, diags *diag.List) {
	m := a.Meta
	if a.Pattern == "" {
		diags.Errorf(m.Pos, "add `actor: <id or pattern>`", "actor entry has no actor id")
	} else if _, err := path.Match(a.Pattern, ""); err != nil {
		diags.Errorf(m.At("actor"), "", "invalid actor pattern %q: %v", a.Pattern, err)
	}
	for _, s := range a.Scopes {
		if !scopeRe.MatchString(s) {
			diags.Errorf(m.At("scopes"), "use exact capabilities, prefix.* or *", "invalid scope %q", s)
		}
	}
	validateToolPatterns(m, a.ToolAllow, a.ToolDeny, diags)
	if a.RateLimit.PerMinute < 0 || a.RateLimit.PerHour < 0 {
		diags.Errorf(a.RateLimit.Meta.Pos, "0 means no limit", "rate limits must not be negative")
	}
}

// validateGlobalBudget checks the repository-wide spending limits and
// what happens when they are reached.
func validateGlobalBudget(b model.GlobalBudget, diags *diag.List) {
	if b.DailyLimit < 0 || b.MonthlyLimit < 0 {
		diags.Errorf(b.Meta.Pos, "", "budget limits must not be negative")
	}
	if !slices.IsSorted(b.AlertThresholds) {
		diags.Errorf(b.Meta.At("alert_thresholds"), "list them in ascending order", "alert_thresholds are not ascending")
	}
	for _, t := range b.AlertThresholds {
		if t <= 0 || t > 1 {
			diags.Errorf(b.Meta.At("alert_thresholds"), "write fractions such as 0.5 for 50%", "alert threshold %v is outside (0, 1]", t)
		}
	}
	if !slices.Contains([]string{model.PauseAll, model.PauseNonCritical, model.AlertOnly}, b.OnLimitReached) {
		diags.Errorf(b.Meta.At("on_limit_reached"), "use pause-all, pause-non-critical or alert-only", "unknown on_limit_reached %q", b.OnLimitReached)
	}
	r := b.AlertRoute
	if r.Webhook != "" {
		if u, err := url.Parse(r.Webhook); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			diags.Errorf(r.Meta.At("webhook"), "use an absolute http(s) URL", "invalid alert_route webhook URL %q", r.Webhook)
		}
	}
	if r.Issue < 0 {
		diags.Errorf(r.Meta.At("issue"), "", "alert_route issue number must be positive")
	}
}

// validatePricing checks that a tool's rate in budget.pricing names a tool
// of the catalog (amounts are never negative: the decoder refuses them).
func validatePricing(p *model.Policies, diags *diag.List) {
	pr := p.Budget.Pricing
	for _, name := range slices.Sorted(maps.Keys(pr.Tools)) {
		if p.Tools[name] != nil {
			continue
		}
		at := pr.Meta.At("tools")
		if r := pr.Tools[name]; r != nil {
			at = r.Meta.Pos
		}
		diags.Errorf(at, suggest(name, toolNames(p), "tools"), "pricing for tool %q, which is not in the catalog", name)
	}
}

// short prints 1m rather than time.Duration's 1m0s.
func short(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

func toolNames(p *model.Policies) []string {
	names := make([]string, 0, len(p.Tools))
	for n := range p.Tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func scheduleRefs(cfg *model.Config) []string {
	var out []string
	for _, s := range cfg.Schedules {
		out = append(out, s.ID, s.Name)
	}
	return out
}

// validateApprovers refuses a schedule that can need an approval nobody
// may give: its task policy's approver_role, else permissions.approve,
// must name a role with members.
func validateApprovers(p *model.Policies, s *model.Schedule, tool *model.Tool, diags *diag.List) {
	reasons := p.ApprovalReasons(s, tool)
	if len(reasons) == 0 {
		return
	}
	taskRole := ""
	if tp := p.TaskPolicy(tool.Name, s.Tenant); tp != nil {
		taskRole = tp.ApproverRole
	}
	for _, role := range p.RolesFor(model.VerbApprove, taskRole) {
		if len(p.Roles[role]) > 0 {
			return
		}
	}
	diags.Errorf(s.Meta.At("target_tool"), "name approver_role in the task policy of "+tool.Name+", or a default with `permissions: {approve: [<role>]}`, and list its members under roles: in policies/",
		"schedule %q can need an approval (%s) but nobody may approve it", s.Name, strings.Join(reasons, "; "))
}
