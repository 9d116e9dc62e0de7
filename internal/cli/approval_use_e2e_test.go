package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/forge/githubtest"
)

// useCase is a repository with one tier-2 schedule, deploy, behind the
// GitHub test server, whose 09:00 run waits for pull request #1. Its tool
// runs scripts/tools/deploy.sh, which appends its run id and payload to
// side, and fails while the file fail exists.
type useCase struct {
	t    *testing.T
	srv  *githubtest.Server
	ci   *ciRun
	side string
	fail string
}

const usePolicies = `tools:
  deployer:
    kind: exec
    command: [sh, scripts/tools/deploy.sh]
    rollback: [sh, scripts/tools/undo.sh]
    env: [SIDE, FAIL]
    tier: external
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
roles:
  founder: [octocat, "@octo/founders"]
  ops: [mallory]
permissions:
  approve: [founder]
  dead_letter_retry: [founder, ops]
  rollback: [founder]
trust:
  accept_risk: these tests are about approvals, not the repository's setup
`

func newUseCase(t *testing.T, retries int) *useCase {
	t.Helper()
	srv := githubtest.New(t, githubtest.Config{Files: map[string]string{
		"schedules/s.yaml": `- {id: deploy, name: deploy, cron: "0 9 * * *", target_tool: deployer, payload: {env: prod},
   retry: {max_attempts: ` + itoa(retries) + `, backoff_base: 5s}}` + "\n",
		"policies/p.yaml":         usePolicies,
		"scripts/tools/deploy.sh": "printf '%s ' \"$ASTRA_RUN_ID\" >> \"$SIDE\"; cat >> \"$SIDE\"; echo >> \"$SIDE\"\nif [ -e \"$FAIL\" ]; then exit 1; fi\n",
		"scripts/tools/undo.sh":   "echo \"undo $ASTRA_ROLLBACK_OF\" >> \"$SIDE\"\n",
	}})
	srv.AddUser("tok-octocat", "octocat")
	srv.AddUser("tok-mallory", "mallory")
	srv.AddUser("tok-fiona", "fiona")
	srv.AddTeamMember("octo", "founders", "fiona")
	dir := t.TempDir()
	u := &useCase{t: t, srv: srv, side: filepath.Join(dir, "side.log"), fail: filepath.Join(dir, "fail")}
	u.ci = &ciRun{t: t, srv: srv, env: map[string]string{
		"GITHUB_TOKEN": srv.BotToken, "GITHUB_REPOSITORY": srv.Repository(), "GITHUB_API_URL": srv.URL,
		"SIDE": u.side, "FAIL": u.fail, "GITHUB_ACTIONS": "", "ASTRA_APPROVAL_SECRET": "", "ASTRA_SANDBOX_WRITABLE": dir,
	}}
	u.runDue("2026-11-22T08:00:00Z", 0)
	if out := u.runDue("2026-11-22T09:00:30Z", 0); !strings.Contains(out, "awaiting_approval deploy") || !strings.Contains(out, "/pull/1") {
		t.Fatalf("no approval request:\n%s", out)
	}
	return u
}

// runDue is a cron run; code is the exit status it must have.
func (u *useCase) runDue(now string, code int) string {
	u.t.Helper()
	out, got := u.ci.run(now, "run-due")
	if got != code {
		u.t.Fatalf("run-due at %s exited %d, want %d:\n%s", now, got, code, out)
	}
	return out
}

// as runs a command in a workflow login started (GitHub Actions says who).
func (u *useCase) as(login, now string, args ...string) (string, int) {
	u.t.Helper()
	c := &ciRun{t: u.t, srv: u.srv, env: map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_ACTOR": login}}
	for k, v := range u.ci.env {
		if k != "GITHUB_ACTIONS" {
			c.env[k] = v
		}
	}
	return c.run(now, args...)
}

// ran is what the tool did, one line per run.
func (u *useCase) ran() []string {
	s := strings.TrimSpace(readFile(u.t, u.side))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func (u *useCase) setFail(on bool) {
	u.t.Helper()
	if !on {
		os.Remove(u.fail)
		return
	}
	if err := os.WriteFile(u.fail, nil, 0o644); err != nil {
		u.t.Fatal(err)
	}
}

// wantLedger requires a ledger line matching each pattern.
func (u *useCase) wantLedger(patterns ...string) {
	u.t.Helper()
	l := u.ci.ledger()
	for _, p := range patterns {
		if !matches(l, p) {
			u.t.Errorf("ledger lacks %s", p)
		}
	}
}

const evil = "echo evil >> \"$SIDE\"\n"

// TestApprovalBindsTheAction: what an approver merged is what runs. The
// tool's command changed in policies, its script edited on main, a commit
// pushed onto the approval branch before the merge, the payload edited
// before a retry: each refuses the approval (recorded with schedule, who
// approved and why), and the tool never runs what nobody approved.
func TestApprovalBindsTheAction(t *testing.T) {
	t.Run("command changed in policies", func(t *testing.T) {
		u := newUseCase(t, 1)
		u.srv.Merge(t, 1, "tok-octocat")
		u.srv.CommitFiles(t, "main", map[string][]byte{"policies/p.yaml": []byte(strings.Replace(usePolicies,
			"command: [sh, scripts/tools/deploy.sh]", `command: [sh, -c, 'echo evil >> "$SIDE"']`, 1))}, "a better deploy")
		u.runDue("2026-11-22T09:30:00Z", 0)
		if got := u.ran(); got != nil {
			t.Fatalf("the tool ran: %q", got)
		}
		u.wantLedger(`"event":"approval.refused","schedule_id":"deploy".*"reason":"action_changed".*the tool's entry in policies changed.*"by":"octocat"`)
	})
	t.Run("script edited after the merge", func(t *testing.T) {
		u := newUseCase(t, 1)
		u.srv.Merge(t, 1, "tok-octocat")
		u.srv.CommitFiles(t, "main", map[string][]byte{"scripts/tools/deploy.sh": []byte(evil)}, "tweak deploy")
		u.runDue("2026-11-22T09:30:00Z", 0)
		if got := u.ran(); got != nil {
			t.Fatalf("the tool ran: %q", got)
		}
		u.wantLedger(`"event":"approval.refused","schedule_id":"deploy".*"reason":"action_changed".*scripts/tools/deploy.sh changed \(blob [0-9a-f]{7}→[0-9a-f]{7}\).*"by":"octocat"`)
	})
	t.Run("extra commit on the approval branch", func(t *testing.T) {
		u := newUseCase(t, 1)
		u.srv.CommitFiles(t, "astra/approve/deploy", map[string][]byte{"scripts/tools/deploy.sh": []byte(evil)}, "fix deploy")
		u.srv.Merge(t, 1, "tok-octocat")
		u.runDue("2026-11-22T09:30:00Z", 0)
		if got := u.ran(); got != nil {
			t.Fatalf("the tool ran: %q", got)
		}
		u.wantLedger(`"event":"approval.refused","schedule_id":"deploy".*"reason":"foreign_commit".*not the commit astra wrote.*"by":"octocat"`)
	})
	t.Run("payload edited before a retry", func(t *testing.T) {
		u := newUseCase(t, 3)
		u.setFail(true)
		u.srv.Merge(t, 1, "tok-octocat")
		u.runDue("2026-11-22T09:10:00Z", 1)
		u.srv.CommitFiles(t, "main", map[string][]byte{"schedules/s.yaml": []byte(
			`- {id: deploy, name: deploy, cron: "0 9 * * *", target_tool: deployer, payload: {env: evil}, retry: {max_attempts: 3, backoff_base: 5s}}` + "\n")}, "retarget")
		u.setFail(false)
		u.runDue("2026-11-22T09:11:00Z", 0)
		if got := u.ran(); len(got) != 1 || strings.Contains(got[0], "evil") {
			t.Fatalf("the retry ran the edited payload: %q", got)
		}
		u.wantLedger(`"event":"approval.refused","schedule_id":"deploy".*"reason":"action_changed".*the payload or event changed.*"by":"octocat"`,
			`"event":"run.dead_lettered","schedule_id":"deploy".*"reason":"action_changed"`)
	})
}

// TestApprovalDeadLetterRetry: releasing an approved slot's dead letter is
// role-checked (dead_letter_retry, which a non-approver may hold), and the
// released slot needs an approval of its own before it runs, whoever
// released it.
func TestApprovalDeadLetterRetry(t *testing.T) {
	u := newUseCase(t, 1)
	u.setFail(true)
	u.srv.Merge(t, 1, "tok-octocat")
	u.runDue("2026-11-22T09:10:00Z", 1)
	if len(u.ran()) != 1 {
		t.Fatalf("runs: %q", u.ran())
	}
	u.setFail(false)
	// A non-approver who may release dead letters.
	if out, code := u.as("mallory", "2026-11-22T09:15:00Z", "dead-letter", "retry", "deploy"); code != 0 {
		t.Fatalf("release: %d\n%s", code, out)
	}
	out := u.runDue("2026-11-22T09:20:00Z", 0)
	if len(u.ran()) != 1 || !strings.Contains(out, "awaiting_approval deploy @ 2026-11-22 09:00Z") || !strings.Contains(out, "/pull/2") {
		t.Fatalf("the released slot ran without an approval: %q\n%s", u.ran(), out)
	}
	u.wantLedger(`"event":"dead_letter.released","schedule_id":"deploy".*"by":"mallory"`,
		`"event":"approval.requested","schedule_id":"deploy","slot":"2026-11-22T09:00:00Z","idempotency_key":"deploy@2026-11-22T09:00:00Z".*"pr":2`)

	// Approved again, it runs (and fails again); released by an approver,
	// it asks again too.
	u.setFail(true)
	u.srv.Merge(t, 2, "tok-octocat")
	u.runDue("2026-11-22T09:30:00Z", 1)
	if len(u.ran()) != 2 {
		t.Fatalf("the new approval did not run: %q", u.ran())
	}
	u.setFail(false)
	if out, code := u.as("octocat", "2026-11-22T09:35:00Z", "dead-letter", "retry", "deploy"); code != 0 {
		t.Fatalf("release: %d\n%s", code, out)
	}
	out = u.runDue("2026-11-22T09:40:00Z", 0)
	if len(u.ran()) != 2 || !strings.Contains(out, "awaiting_approval deploy") {
		t.Fatalf("released by an approver, it ran without an approval: %q\n%s", u.ran(), out)
	}
}

// TestApprovalRollback: rolling back a tier-2 run is role-checked and runs
// the compensating command only under an approval of its own, one per
// rollback: --force asks again.
func TestApprovalRollback(t *testing.T) {
	u := newUseCase(t, 1)
	u.srv.Merge(t, 1, "tok-octocat")
	u.runDue("2026-11-22T09:10:00Z", 0)
	const run = "deploy@2026-11-22T09:00:00Z#1"
	if out, code := u.as("mallory", "2026-11-22T10:00:00Z", "rollback", run); code != 2 || !strings.Contains(out, "may not roll back") {
		t.Fatalf("a rollback by a non-approver: %d\n%s", code, out)
	}
	out, code := u.as("octocat", "2026-11-22T10:00:00Z", "rollback", run)
	if code != 0 || !strings.Contains(out, "awaiting_approval") || !strings.Contains(out, "/pull/2") {
		t.Fatalf("rollback: %d\n%s", code, out)
	}
	if n := strings.Count(readFile(t, u.side), "undo"); n != 0 {
		t.Fatalf("the compensating command ran without an approval")
	}
	u.srv.Merge(t, 2, "tok-octocat")
	if out, code := u.as("octocat", "2026-11-22T10:10:00Z", "rollback", run); code != 0 || !strings.Contains(out, "ran ") {
		t.Fatalf("approved rollback: %d\n%s", code, out)
	}
	out, code = u.as("octocat", "2026-11-22T10:20:00Z", "rollback", run, "--force")
	if code != 0 || !strings.Contains(out, "awaiting_approval") {
		t.Fatalf("rollback --force: %d\n%s", code, out)
	}
	if n := strings.Count(readFile(t, u.side), "undo"); n != 1 {
		t.Fatalf("the compensating command ran %d times, want once", n)
	}
	u.wantLedger(`"event":"action.refused","schedule_id":"deploy".*"reason":"rollback".*"by":"mallory"`,
		`"event":"approval.consumed","schedule_id":"deploy".*"idempotency_key":"deploy@2026-11-22T09:00:00Z#rollback"`,
		`"event":"rollback.completed","schedule_id":"deploy"`)
}

// TestTeamOutageWhileMergeChecked: the teams API answering 503 while a
// merge by a team member is checked leaves the request pending (exit 3,
// recorded as check_failed), and the next run checks it again and runs it.
func TestTeamOutageWhileMergeChecked(t *testing.T) {
	u := newUseCase(t, 1)
	u.srv.Merge(t, 1, "tok-fiona")
	for range 5 {
		u.srv.FailNext("GET", "/orgs/octo/teams/founders/memberships/fiona", 503, nil)
	}
	u.runDue("2026-11-22T09:10:00Z", 3)
	if u.ran() != nil {
		t.Fatal("the tool ran on an unchecked merge")
	}
	l := u.ci.ledger()
	if !matches(l, `"event":"approval.check_failed","schedule_id":"deploy".*checking who merged pull request #1`) || matches(l, `"event":"approval.refused"`) {
		t.Fatalf("an outage must leave the request pending:\n%s", l)
	}
	u.runDue("2026-11-22T09:20:00Z", 0)
	if got := u.ran(); len(got) != 1 {
		t.Fatalf("after the outage: %q", got)
	}
}
