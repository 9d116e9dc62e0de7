package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/runner"
)

// testApp is an invocation without cobra: the app commands run in, over
// repo, with env as its environment and buffers as its terminal.
func testApp(t *testing.T, repo string, env map[string]string) (a *app, stdout, stderr *bytes.Buffer) {
	t.Helper()
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	a = newApp(strings.NewReader(""), stdout, stderr, environ)
	setDefaults(a.v)
	a.v.Set("repo", repo)
	return a, stdout, stderr
}

// TestFinishRecordWarnsOnce: each warning of a recorded decision is
// printed once.
func TestFinishRecordWarnsOnce(t *testing.T) {
	a, out, _ := testApp(t, t.TempDir(), nil)
	rep := &runner.Report{Command: "approve", Warnings: []string{"the clock is behind", "a lock was left"}}
	if err := a.finishRecord(rep, nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range rep.Warnings {
		if n := strings.Count(out.String(), "warning: "+w+"\n"); n != 1 {
			t.Errorf("%q printed %d times:\n%s", w, n, out)
		}
	}
}

// TestUntrustedTextReachesNoTerminal: names, tool output and errors that
// carry escape sequences reach the terminal, the annotations, the step
// outputs and the job summary without them.
func TestUntrustedTextReachesNoTerminal(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": filepath.Join(dir, "out"), "GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary")}
	a, out, errb := testApp(t, dir, env)
	a.v.Set("verbose", true)
	a.cfg = &model.Config{}
	evil := "\x1b]0;pwned\x07\x1b[2J\u009b1A\x9b"
	rep := &runner.Report{Command: "run-due", Now: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC), Outcomes: []*runner.Outcome{
		{Name: "deploy" + evil, Tool: "t", Key: "k", Action: runner.ActionFailed, Reason: "exit", Detail: "boom" + evil, Output: "line\x1b[1A" + evil},
	}, Warnings: []string{"warned" + evil}, InfraErrors: []string{"GitHub said" + evil}}
	if err := a.finishRun(rep, nil); err == nil {
		t.Fatal("a failed run finished without an error")
	}
	printError(a.stderr, errorString("astra: "+evil))
	summary, _ := os.ReadFile(env["GITHUB_STEP_SUMMARY"])
	outputs, _ := os.ReadFile(env["GITHUB_OUTPUT"])
	for name, s := range map[string]string{"stdout": out.String(), "stderr": errb.String(), "summary": string(summary), "outputs": string(outputs)} {
		if strings.ContainsAny(s, "\x1b\x07\u009b") || strings.Contains(s, "\x9b") {
			t.Errorf("%s carries a control character: %q", name, s)
		}
	}
	if !strings.Contains(string(summary), "`deploy1A\uFFFD`") || !strings.Contains(string(outputs), "failed=1\n") {
		t.Errorf("summary or outputs missing:\n%s\n%s", summary, outputs)
	}
	for _, want := range []string{"failed            deploy1A\uFFFD  [t", "::error title=astra%3A deploy1A\uFFFD failed::k (exit) boom1A\uFFFD",
		"| line1A\uFFFD"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a bit too long", 10, "a bit too…"},
		{"日本語のエラーメッセージ", 5, "日本語の…"},
		{"ok ✅✅✅", 5, "ok ✅…"},
	} {
		got := truncate(c.in, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// TestRedactorReadsTheInjectedEnvironment: the secrets hidden are those
// of the environment the invocation was given, not the process's.
func TestRedactorReadsTheInjectedEnvironment(t *testing.T) {
	t.Setenv("PROCESS_API_TOKEN", "process-token-value-1")
	a, _, _ := testApp(t, t.TempDir(), map[string]string{"DEPLOY_API_TOKEN": "injected-token-value-2", "GITHUB_TOKEN": "ghs_short"})
	got := a.redactor().String("deploy with injected-token-value-2 and ghs_short, process-token-value-1 untouched")
	if strings.Contains(got, "injected-token-value-2") || strings.Contains(got, "ghs_short") {
		t.Errorf("injected secrets not hidden: %q", got)
	}
	if !strings.Contains(got, "process-token-value-1") {
		t.Errorf("the process environment was read: %q", got)
	}
}
