package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/cron"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/runner"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the output")

var at = time.Date(2026, 11, 23, 9, 0, 30, 0, time.UTC)

// busyRun is a run with one outcome of every kind a terminal and a job
// summary show, and everything else a report can carry.
func busyRun() *runner.Report {
	slot := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	return &runner.Report{
		Command: "run-due", Now: at,
		Repaired:     &ledger.Repaired{File: "var/schedules/2026-11.ndjson.gz", Dropped: 312, Salvaged: 4},
		NewSchedules: []runner.NewSchedule{{Name: "weekly_digest", Next: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}, {Name: "on_push", ID: "p"}, {Name: "bootstrap", RunNow: true}},
		Outcomes: []*runner.Outcome{
			{Name: "nightly_report", Key: "nightly@2026-11-23T09:00:00Z", Slot: slot, Tool: "report", Tier: 1, Action: runner.ActionRan, Chain: "publish_report", Notify: true,
				Usage: ledger.Usage{Tokens: 1200, Cost: 42 * money.Dollar / 1000, WallClockMS: 3400}, Output: "wrote reports/nightly.md\n"},
			{Name: "sync_crm", Key: "sync_crm@2026-11-23T09:00:00Z", Slot: slot, Tool: "crm_sync", Tier: 1, Action: runner.ActionFailed, Reason: ledger.ReasonExit, Detail: "exit status 2",
				RetryAt: slot.Add(10 * time.Minute), Usage: ledger.Usage{WallClockMS: 800}},
			{Name: "flaky", Slot: slot.Add(-time.Hour), Tool: "crm_sync", Tier: 1, Action: runner.ActionFailed, Reason: ledger.ReasonExit, DeadLettered: true},
			{Name: "hourly_check", Slot: slot, Tool: "check", Tier: 0, Action: runner.ActionSkipped, Reason: ledger.ReasonBudget, Detail: "per-day budget 4/4 used"},
			{Name: "catchup_all", Slot: slot.Add(-2 * time.Hour), Tool: "check", Tier: 0, Action: runner.ActionMissed, Reason: ledger.ReasonMissed, Missed: 3},
			{Name: "retry_too_late", Key: "r@2026-11-20T09:00:00Z", Slot: slot.AddDate(0, 0, -3), Tool: "check", Tier: 0, Action: runner.ActionMissed,
				Reason: ledger.ReasonMissed, Detail: "the retry is outside catchup.window", DeadLettered: true},
			{Name: "catchup_old", Slot: slot.Add(-3 * time.Hour), Tool: "check", Tier: 0, Action: runner.ActionRan, Missed: 100, MissedMore: true},
			{Name: "weekly_announcement", Slot: slot, Tool: "announce", Tier: 2, Action: runner.ActionAwaitingApproval, Reason: ledger.ReasonApprovalPending,
				PR: 17, PRURL: "https://github.com/acme/ops/pull/17"},
			{Name: "deploy", Slot: slot, Tool: "deploy", Tier: 2, Action: runner.ActionAwaitingApproval, Reason: ledger.ReasonApprovalPending, PR: 18},
			{Name: "local_deploy", Tool: "deploy", Tier: 2, Action: runner.ActionAwaitingApproval, Reason: ledger.ReasonApprovalPending},
			{Name: "long_job", Slot: slot.Add(-30 * time.Minute), Tool: "batch", Tier: 1, Action: runner.ActionLost, Reason: ledger.ReasonLost,
				Detail: "claimed by gh-1-1 at 08:30Z and no outcome by its deadline"},
			{Name: "a|b `name`", Slot: slot, Tool: "t|u", Tier: 0, Action: runner.ActionRan, Detail: "two\nlines"},
		},
		OverLimit: 2,
		Alerts:    []string{"day spend $4.10 of $5.00 (80%)"},
		Approvals: []*runner.ApprovalNote{
			{Name: "deploy", Event: string(ledger.ApprovalApproved), PR: 12, Detail: "approved by alice (pull request #12, role founder)"},
			{Name: "cleanup", Event: string(ledger.ApprovalExpired), Detail: "nobody decided within 24h"},
		},
		Warnings:    []string{"committed var/schedules/2026-11.ndjson.gz: an earlier run appended to it and was stopped before its commit", "nightly_report: tool report changed 1 file(s) it does not declare under writes:, left uncommitted: notes.txt"},
		Errors:      []string{"recording the outcome of flaky: disk full"},
		InfraErrors: []string{"reading pull request #17: GitHub answered 502"},
		Commit:      "0123456789abcdef0123", Pushed: true,
	}
}

// dryRun is a dry run: tools that dry-run show their output, the others
// what they would run; nothing is recorded, so no ledger status.
func dryRun() *runner.Report {
	slot := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	return &runner.Report{
		Command: "run-due", Now: at, DryRun: true,
		NewSchedules: []runner.NewSchedule{{Name: "nightly_report", Next: slot.Add(24 * time.Hour)}},
		Outcomes: []*runner.Outcome{
			{Name: "summarize", Slot: slot, Tool: "summarize", Tier: 0, Action: runner.ActionDryRun, Output: "would summarize 3 files\nand write one\n"},
			{Name: "deploy", Slot: slot, Tool: "deploy", Tier: 1, Action: runner.ActionWouldRun, WouldRun: "./scripts/deploy.sh --prod"},
		},
		Commit: "ffff", Pushed: true,
	}
}

// withSchedules is a configuration with schedules whose next runs the summary lists, soonest first
// (a disabled one and an event-triggered one are not listed).
func withSchedules(t *testing.T) *model.Config {
	t.Helper()
	spec := func(expr string) *cron.Spec {
		s, err := cron.Parse(expr, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return &model.Config{Schedules: []*model.Schedule{
		{Name: "nightly_report", Spec: spec("0 2 * * *"), Enabled: true},
		{Name: "hourly_check", Spec: spec("15 * * * *"), Enabled: true},
		{Name: "paused", Spec: spec("* * * * *"), Enabled: false},
		{Name: "on_push", Enabled: true},
	}}
}

// budget is spend past the day's alert threshold, the day paused, and the
// per-day run budgets of tier-1 schedules.
func budget() introspect.Budget {
	return introspect.Budget{
		Global: introspect.GlobalBudget{
			Day:   introspect.Period{Name: "day", Spent: 41 * money.Dollar / 10, Reserved: money.Dollar / 2, Limit: 5 * money.Dollar, Paused: "since 2026-11-23T08:50:00Z (pause-non-critical)"},
			Month: introspect.Period{Name: "month", Spent: 12 * money.Dollar, Limit: 50 * money.Dollar},
		},
		Schedules: []introspect.ScheduleBudget{
			{Name: "nightly_report", Tier: 1, PerDay: 4, Consumed: 2},
			{Name: "sync_crm", Tier: 1, PerDay: 4, Consumed: 0},
			{Name: "hourly_check", Tier: 0},
		},
	}
}

// TestGolden holds the terminal report, the job summary and the
// annotations of several runs to testdata/*.golden; -update rewrites them
// (review the diff).
func TestGolden(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(*bytes.Buffer)
	}{
		{"terminal_plain", func(b *bytes.Buffer) { Terminal(b, busyRun(), false, Plain) }},
		{"terminal_ansi_verbose", func(b *bytes.Buffer) { Terminal(b, busyRun(), true, ANSI) }},
		{"terminal_dry_run", func(b *bytes.Buffer) { Terminal(b, dryRun(), false, Plain) }},
		{"terminal_nothing_due", func(b *bytes.Buffer) { Terminal(b, &runner.Report{Command: "run-due", Now: at}, false, Plain) }},
		{"terminal_not_pushed", func(b *bytes.Buffer) { Terminal(b, notPushed(), false, Plain) }},
		{"terminal_interrupted", func(b *bytes.Buffer) { Terminal(b, interrupted(), false, Plain) }},
		{"summary", func(b *bytes.Buffer) { Summary(b, busyRun(), withSchedules(t), budget()) }},
		{"summary_dry_run", func(b *bytes.Buffer) { Summary(b, dryRun(), withSchedules(t), introspect.Budget{}) }},
		{"summary_nothing_due", func(b *bytes.Buffer) {
			Summary(b, &runner.Report{Command: "run-due", Now: at}, &model.Config{}, introspect.Budget{})
		}},
		{"summary_not_pushed", func(b *bytes.Buffer) { Summary(b, notPushed(), &model.Config{}, introspect.Budget{}) }},
		{"summary_no_limits", func(b *bytes.Buffer) {
			Summary(b, &runner.Report{Command: "run", Now: at}, &model.Config{}, unlimited())
		}},
		{"annotations", func(b *bytes.Buffer) { Annotations(b, busyRun()) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			c.write(&b)
			golden(t, c.name, b.Bytes())
		})
	}
}

// notPushed is a run whose push failed: its events wait on a spill branch.
func notPushed() *runner.Report {
	return &runner.Report{Command: "run-due", Now: at, Commit: "abcdef0123456789", Spilled: "astra/spill/gh-1-1", Unpushed: 3,
		Outcomes: []*runner.Outcome{{Name: "n", Tool: "t", Action: runner.ActionRan}}}
}

// interrupted is a run stopped after its claims were pushed.
func interrupted() *runner.Report {
	return &runner.Report{Command: "run-due", Now: at, Commit: "abcdef0123456789", PushedCommit: "0011223344556677", Unpushed: 2, Interrupted: true,
		Outcomes: []*runner.Outcome{{Name: "n", Tool: "t", Action: runner.ActionFailed, Reason: "interrupted"}}}
}

// unlimited has no limits: the bars say so instead of dividing by zero.
func unlimited() introspect.Budget {
	return introspect.Budget{Global: introspect.GlobalBudget{Day: introspect.Period{Spent: money.Dollar}, Month: introspect.Period{Spent: 9 * money.Dollar}}}
}

// golden compares got with testdata/<name>.golden, or rewrites the file
// with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/report -run TestGolden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (go test ./internal/report -run TestGolden -update rewrites it; review the diff)\n got:\n%s\nwant:\n%s", name, path, got, want)
	}
}

func TestBar(t *testing.T) {
	for _, c := range []struct {
		spent, limit money.USD
		want         string
	}{
		{0, 0, "no limit"},
		{money.Dollar, 0, "no limit"},
		{0, 5 * money.Dollar, "░░░░░░░░░░   0%"},
		{money.Dollar, 4 * money.Dollar, "███░░░░░░░  25%"}, // 2.5 cells round up
		{5 * money.Dollar, 5 * money.Dollar, "██████████ 100%"},
		{8 * money.Dollar, 5 * money.Dollar, "██████████ 160%"}, // over the limit: a full bar, the true share
	} {
		if got := Bar(c.spent, c.limit, 10); got != c.want {
			t.Errorf("Bar(%s, %s) = %q, want %q", c.spent, c.limit, got, c.want)
		}
	}
}
