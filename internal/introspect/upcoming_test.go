package introspect

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// upcomingRepo writes a repository with the given schedules and these
// policies, and loads it.
func upcomingRepo(t *testing.T, schedules string) (string, *model.Config) {
	t.Helper()
	dir := t.TempDir()
	for p, body := range map[string]string{"schedules/s.yaml": schedules, "t.sh": "#!/bin/sh\n", "policies/p.yaml": `tools:
  hello: {kind: exec, command: [./t.sh], tier: read_only}
  deployer: {kind: exec, command: [./t.sh], tier: external}
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
roles: {ops: [octocat]}
permissions: {approve: [ops]}
`} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg, diags, err := config.Load(dir)
	if err != nil || diags.Errors() > 0 {
		t.Fatalf("config: %v %v", err, diags)
	}
	return dir, cfg
}

func TestUpcoming(t *testing.T) {
	_, cfg := upcomingRepo(t, `- {id: hello, name: hello, cron: "0 9 * * *", target_tool: hello}
- {id: off, name: off, cron: "0 9 * * *", target_tool: hello, enabled: false}
- {id: onpaid, name: onpaid, on_event: order.paid, target_tool: hello}
- {id: deploy, name: deploy, cron: "0 10 * * *", target_tool: deployer}
`)
	now := time.Date(2026, 11, 22, 8, 30, 0, 0, time.UTC)
	st := state.New(now)
	got := Upcoming(cfg, st, cfg.Schedules, now, 2)
	if len(got) != 3 || got[0].Name != "hello" || got[1].Name != "off" || got[2].Name != "deploy" {
		t.Fatalf("event-only schedules with nothing waiting are left out: %+v", got)
	}
	if off := got[1]; !off.Disabled || len(off.Next) != 0 || got[0].Disabled {
		t.Errorf("a disabled schedule is shown disabled, without fire times: %+v", off)
	}
	got = slices.Delete(got, 1, 2)
	h := got[0]
	if h.Trigger != "0 9 * * *" || len(h.Next) != 2 || !h.Next[0].Equal(now.Add(30*time.Minute)) || !h.Next[1].Equal(now.Add(24*time.Hour+30*time.Minute)) {
		t.Errorf("hello: %+v", h)
	}
	if h.Held != "" || got[1].Held == "" {
		t.Errorf("only the deploy, which needs an approval, is held: %q, %q", h.Held, got[1].Held)
	}
}

func TestTriggerOf(t *testing.T) {
	_, cfg := upcomingRepo(t, `- {id: a, name: a, cron: "0 9 * * *", run_immediately: true, target_tool: hello}
- {id: b, name: b, on_event: x.y, target_tool: hello}
`)
	if got := TriggerOf(cfg.Schedule("a")); got != "0 9 * * *, immediately" {
		t.Errorf("a: %q", got)
	}
	if got := TriggerOf(cfg.Schedule("b")); got != "on x.y" {
		t.Errorf("b: %q", got)
	}
}

func TestApprovals(t *testing.T) {
	dir, cfg := upcomingRepo(t, `- {id: hello, name: hello, cron: "0 9 * * *", target_tool: hello}
- {id: deploy, name: deploy, cron: "0 10 * * *", target_tool: deployer}
- {id: quiet, name: quiet, cron: "0 11 * * *", target_tool: hello}
`)
	now := time.Date(2026, 11, 22, 11, 30, 0, 0, time.UTC)
	st := state.New(now)
	st.Approvals["deploy"] = &state.Approval{Slot: now.Add(-90 * time.Minute), Status: "pending", PR: 7,
		RequestedAt: now.Add(-90 * time.Minute), ExpiresAt: now.Add(22 * time.Hour)}
	p := filepath.Join(dir, filepath.FromSlash(approval.Path("hello")))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("left over"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Approvals(cfg, st, dir, Repository{ServerURL: "https://github.com", Name: "octo/widgets"}, now)
	if len(got) != 2 {
		t.Fatalf("rows: %+v", got)
	}
	if h := got[0]; h.Name != "hello" || !h.Token || h.Status != "token file present" || h.PR != 0 || h.URL != "" {
		t.Errorf("hello: %+v", h)
	}
	if d := got[1]; d.Name != "deploy" || d.Token || d.Status != "pending" || d.URL != "https://github.com/octo/widgets/pull/7" ||
		d.Age != "1h30m0s" || d.Why == "" {
		t.Errorf("deploy: %+v", d)
	}
	if url := (Repository{ServerURL: "https://github.com"}).PullURL(7); url != "" {
		t.Errorf("no repository, yet a link: %q", url)
	}
}

func TestDeadLetters(t *testing.T) {
	at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	st := state.New(at)
	for key, d := range map[string]time.Duration{"c": time.Hour, "b": 0, "a": 0} {
		st.DeadLetters[key] = &state.DeadLetter{Key: key, At: at.Add(d)}
	}
	var keys []string
	for _, d := range DeadLetters(st) {
		keys = append(keys, d.Key)
	}
	if len(keys) != 3 || keys[0] != "a" || keys[1] != "b" || keys[2] != "c" {
		t.Errorf("order %v, want oldest first, then by key", keys)
	}
}
