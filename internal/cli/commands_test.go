package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/money"
)

// Commands are functions of their options: these tests call them without
// cobra, on a repository of files (no git: the ledger in var/ is the only
// record).

const fixturePolicies = `tools:
  hello: {kind: exec, command: [./hello.sh], tier: read_only}
  deploy: {kind: exec, command: [./hello.sh], tier: local_write}
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
roles: {ops: [octocat]}
permissions: {approve: [ops], trigger: [ops]}
identities: {me@example.com: octocat}
`

const fixtureSchedules = `- {id: hello, name: hello, cron: "0 9 * * *", target_tool: hello, timezone: Europe/Berlin}
- {id: daily, name: daily, cron: "0 * * * *", target_tool: deploy, per_day_budget: 3}
- {id: onpaid, name: onpaid, on_event: order.paid, target_tool: hello}
`

// fixture writes a repository with files (path -> content) and returns
// its directory.
func fixture(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func standardFixture(t *testing.T) string {
	return fixture(t, map[string]string{"schedules/s.yaml": fixtureSchedules, "policies/p.yaml": fixturePolicies,
		"hello.sh": "#!/bin/sh\necho hello\n"})
}

func TestRunValidate(t *testing.T) {
	dir := fixture(t, map[string]string{"schedules/s.yaml": "- {id: s, name: s, cronn: \"0 9 * * *\", target_tool: hello}\n",
		"policies/p.yaml": fixturePolicies, "hello.sh": "#!/bin/sh\n"})
	a, out, _ := testApp(t, dir, map[string]string{"GITHUB_ACTIONS": "true"})
	err := a.runValidate(context.Background(), validateOptions{})
	if !errors.Is(err, errkind.ErrUsage) || err.Error() != "" {
		t.Fatalf("err = %v, want a usage error already reported", err)
	}
	for _, want := range []string{`schedules/s.yaml:1:20: error: unknown key "cronn" in schedule 1 (did you mean "cron"?)`,
		"1 schedule, 6 tools, 1 actor: 2 errors, 0 warnings", // the builtin tools count too
		`::error file=schedules/s.yaml,line=1,col=20::unknown key "cronn" in schedule 1 (did you mean "cron"?)`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	a, out, _ = testApp(t, standardFixture(t), nil)
	if err := a.runValidate(context.Background(), validateOptions{}); err != nil || !strings.Contains(out.String(), "3 schedules, 6 tools, 1 actor: 0 errors, 0 warnings") {
		t.Fatalf("valid setup: %v\n%s", err, out)
	}
}

// TestRunTriggerDecision: runTrigger refuses what identity.AuthenticateTrigger
// refuses and records it; a dry run records nothing; a signed request runs.
func TestRunTriggerDecision(t *testing.T) {
	dir := standardFixture(t)
	env := map[string]string{"ASTRA_TRIGGER_SECRET": "relay-secret-1", "GITHUB_ACTIONS": "true", "GITHUB_ACTOR": "octocat"}
	ctx := context.Background()
	count := func(kind ledger.Kind) int {
		n := 0
		segs, err := ledger.Open(dir, 0).Segments()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ledger.Scan(dir, segs, ledger.ScanOptions{}, func(e *ledger.Event) error {
			if e.Event == kind {
				n++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}

	a, _, _ := testApp(t, dir, env)
	a.nowFlag, a.testClock = "2026-11-22T11:00:00Z", true
	err := a.runTrigger(ctx, triggerOptions{event: "order.paid", run: runFlags{dryRun: true}})
	if !errors.Is(err, errkind.ErrRefused) || !strings.Contains(err.Error(), "no signature, but ASTRA_TRIGGER_SECRET requires one") {
		t.Fatalf("unsigned, dry run: %v", err)
	}
	if n := count(ledger.TriggerRefused); n != 0 {
		t.Fatalf("a dry run recorded %d refusals", n)
	}
	err = a.runTrigger(ctx, triggerOptions{event: "order.paid", signature: "sha256=00"})
	if !errors.Is(err, errkind.ErrRefused) || count(ledger.TriggerRefused) != 1 {
		t.Fatalf("badly signed: %v, %d refusals recorded", err, count(ledger.TriggerRefused))
	}
	err = a.runTrigger(ctx, triggerOptions{event: "order.paid", signature: "sha256=00", key: "k"})
	if !errors.Is(err, errkind.ErrUsage) || count(ledger.TriggerRefused) != 1 {
		t.Fatalf("GitHub signature with a key: %v", err)
	}

	a, out, _ := testApp(t, dir, env)
	a.nowFlag, a.testClock = "2026-11-22T11:00:00Z", true
	// Signed now: the signature's window is the machine's clock, not --now.
	sig := identity.SignTrigger([]byte("relay-secret-1"), "order.paid", nil, time.Now().Add(-10*time.Second))
	if err := a.runTrigger(ctx, triggerOptions{event: "order.paid", signature: sig}); err != nil {
		t.Fatalf("signed: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "ran") || count(ledger.TriggerAccepted) != 1 {
		t.Fatalf("signed trigger did not run:\n%s", out)
	}
}

func TestRunSchedulesNext(t *testing.T) {
	a, out, _ := testApp(t, standardFixture(t), nil)
	a.nowFlag = "2026-03-29T00:30:00Z"
	a.v.Set("json", true)
	if err := a.runSchedulesNext(context.Background(), schedulesNextOptions{count: 2}); err != nil {
		t.Fatal(err)
	}
	var got []introspect.Next
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	// The event schedule has nothing due or waiting: left out.
	if len(got) != 2 || got[0].Name != "hello" || got[1].Name != "daily" {
		t.Fatalf("schedules: %+v", got)
	}
	// hello fires at 09:00 Berlin: 07:00 UTC on the day summer time starts.
	if n := got[0].Next; len(n) != 2 || n[0].Format("2006-01-02T15:04Z07:00") != "2026-03-29T07:00Z" {
		t.Errorf("hello next %v", n)
	}
	if err := a.runSchedulesNext(context.Background(), schedulesNextOptions{count: 0}); !errors.Is(err, errkind.ErrUsage) {
		t.Errorf("--count 0: %v", err)
	}
	if err := a.runSchedulesNext(context.Background(), schedulesNextOptions{count: 1, schedules: []string{"nosuch"}}); !errors.Is(err, errkind.ErrUsage) {
		t.Errorf("unknown schedule: %v", err)
	}
}

func TestPrintBudget(t *testing.T) {
	b := introspect.Budget{Day: "2026-11-22", Global: introspect.GlobalBudget{
		Day:            introspect.Period{Name: "day", Spent: 120 * money.Dollar / 100, Limit: money.Dollar, Tokens: 1200, Paused: "since 2026-11-22T04:00:10Z (pause-non-critical)"},
		Month:          introspect.Period{Name: "month", Spent: 120 * money.Dollar / 100},
		AlertLevel:     1,
		OnLimitReached: "pause-non-critical",
	}, Schedules: []introspect.ScheduleBudget{{Name: "hello"}, {Name: "daily", Tier: 1, PerDay: 3, Consumed: 1, Left: 2}}}
	var out strings.Builder
	if err := printBudget(&out, b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Global spend (2026-11-22 UTC), on limit: pause-non-critical\n",
		"  day     $1.20  $0.00  $0.00  $1.00  ████████████████████ 120%  1200    PAUSED since 2026-11-22T04:00:10Z (pause-non-critical)\n",
		"  month   $1.20  $0.00  -      none   no limit                   0       open\n",
		"  alert level reached: 100%\n",
		"  daily     1     3        1         2\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("budget lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "hello") {
		t.Errorf("a schedule without a per-day budget is listed:\n%s", out.String())
	}
}

func TestRunTasksListOnAnEmptyLedger(t *testing.T) {
	a, out, _ := testApp(t, standardFixture(t), nil)
	if err := a.runTasksList(context.Background(), tasksListOptions{query: introspect.Query{Limit: 50}}); err != nil || out.String() != "no tasks\n" {
		t.Fatalf("%v: %q", err, out)
	}
	if err := a.runTasksList(context.Background(), tasksListOptions{query: introspect.Query{Status: "weird"}}); !errors.Is(err, errkind.ErrUsage) {
		t.Errorf("--status weird: %v", err)
	}
	if err := a.runTasksList(context.Background(), tasksListOptions{schedule: "nosuch"}); !errors.Is(err, errkind.ErrUsage) {
		t.Errorf("--schedule nosuch: %v", err)
	}
}
