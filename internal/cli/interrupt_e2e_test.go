//go:build unix

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gittest"
)

// interruptRepo is a clone of a bare remote whose main holds schedules
// with a slow and a quick tool; the remote's pre-receive hook is hook.
func interruptRepo(t *testing.T, hook string) (clone, remote string) {
	t.Helper()
	root := t.TempDir()
	remote, seed := filepath.Join(root, "remote.git"), filepath.Join(root, "seed")
	gittest.Must(t, root, "init", "-q", "--bare", "-b", "main", remote)
	for name, body := range map[string]string{
		"schedules/s.yaml": `- {id: slow, name: slow, cron: "0 1 * * *", target_tool: slow}
- {id: quick, name: quick, cron: "0 2 * * *", target_tool: quick}
`,
		"policies/p.yaml": `tools:
  slow: {kind: exec, command: [sh, slow.sh], env: [SIDE], tier: 0}
  quick: {kind: exec, command: [echo, done], tier: 0}
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
`,
		"slow.sh": "touch \"$SIDE/started\"\nexec sleep 60\n",
	} {
		writeFile(t, filepath.Join(seed, name), []byte(body))
	}
	gittest.Must(t, root, "init", "-q", "-b", "main", seed)
	gittest.Must(t, seed, "add", "-A")
	gittest.Must(t, seed, "commit", "-qm", "seed")
	gittest.Must(t, seed, "push", "-q", remote, "main")
	writeFile(t, filepath.Join(remote, "hooks", "pre-receive"), []byte(hook))
	mustDo(t, os.Chmod(filepath.Join(remote, "hooks", "pre-receive"), 0o755))
	clone = filepath.Join(root, "clone")
	gittest.Must(t, root, "clone", "-q", "file://"+remote, clone)
	mustDo(t, os.Mkdir(sideOf(clone), 0o755))
	return clone, remote
}

// sideOf is where the tools of a clone of interruptRepo leave traces: a
// directory outside the repository that their sandbox lets them write.
func sideOf(clone string) string { return filepath.Join(filepath.Dir(clone), "side") }

// interrupt runs astra in repo, sends sig once file exists, and returns
// its exit status, stdout and stderr.
func interrupt(t *testing.T, repo, file string, sig os.Signal, args ...string) (int, string, string) {
	t.Helper()
	bin, err := exec.LookPath("astra")
	mustDo(t, err)
	cmd := exec.Command(bin, append([]string{"--repo", repo}, args...)...)
	cmd.Env = append(gittest.Env(), "SIDE="+sideOf(repo), "ASTRA_SANDBOX_WRITABLE="+sideOf(repo))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	mustDo(t, cmd.Start())
	for i := 0; ; i++ {
		if _, err := os.Stat(file); err == nil {
			break
		}
		if i == 3000 {
			_ = cmd.Process.Kill()
			t.Fatalf("%s did not appear:\n%s%s", file, stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	mustDo(t, cmd.Process.Signal(sig))
	_ = cmd.Wait()
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func wantIn(t *testing.T, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not say %q:\n%s", what, w, text)
		}
	}
}

// TestInterruptDuringTool: SIGINT while a tool runs kills it; its failure
// is recorded and committed, nothing more is pushed, and the report says
// exactly that: the claims are on the remote, the outcomes only here, and
// what a later run does about it. Exit 130.
func TestInterruptDuringTool(t *testing.T) {
	clone, remote := interruptRepo(t, "#!/bin/sh\nexit 0\n")
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if code := Execute(t.Context(), append([]string{"--repo", clone}, args...), strings.NewReader(""), &out, &out, os.Environ()); code != 0 {
			t.Fatalf("astra %v: exit %d\n%s", args, code, out.String())
		}
		return out.String()
	}
	run("run-due", "--now", "2026-11-22T00:00:30Z", "--test-clock")
	code, stdout, stderr := interrupt(t, clone, filepath.Join(sideOf(clone), "started"), os.Interrupt, "run-due", "--now", "2026-11-22T01:00:30Z", "--test-clock")
	if code != errkind.ExitInterrupted {
		t.Errorf("exit %d, want %d", code, errkind.ExitInterrupted)
	}
	claims := gittest.Must(t, remote, "rev-parse", "main")
	local := gittest.Must(t, clone, "rev-parse", "main")
	wantIn(t, "stdout", stdout,
		"failed            slow @ 2026-11-22 01:00Z",
		"canceled: astra was interrupted; the tool's process group was killed",
		"ledger committed "+local[:12]+", not pushed: the remote has this run's commit "+claims[:12]+", but not the 3 events after it (in this checkout only)",
		"interrupted after the claims were pushed: a run from this checkout continues from "+local[:12],
		"reports each claimed run lost once its claim's deadline has passed")
	if strings.Contains(stdout, "and pushed") {
		t.Errorf("stdout claims the outcomes were pushed:\n%s", stdout)
	}
	wantIn(t, "stderr", stderr, "pushing the ledger: push to origin", "was interrupted")
	if strings.Contains(stderr, "network") || strings.Contains(stderr, "spill") {
		t.Errorf("stderr gives advice for another failure:\n%s", stderr)
	}
	if gittest.Must(t, remote, "log", "-1", "--format=%s", "main") != "astra: claim 1 run(s) [skip ci]" {
		t.Errorf("the remote's tip is not the claims' commit")
	}
	wantIn(t, "the local ledger", run("ledger", "cat"), `"event":"run.failed","schedule_id":"slow"`, `"reason":"canceled"`)
}

// TestInterruptDuringPush: SIGTERM while the outcomes are being pushed
// stops the push; the report says what the remote has and what it lacks.
func TestInterruptDuringPush(t *testing.T) {
	// The first push (the claims) goes through; the second waits until
	// the test releases it.
	hook := `#!/bin/sh
n=$(cat pushes 2>/dev/null || echo 0); n=$((n+1)); echo $n > pushes
[ "$n" -lt 3 ] && exit 0
touch in-push
i=0; while [ ! -f release ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
exit 0
`
	clone, remote := interruptRepo(t, hook)
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(remote, "release"), nil, 0o644) })
	var out bytes.Buffer
	if code := Execute(t.Context(), []string{"--repo", clone, "run-due", "--now", "2026-11-22T00:00:30Z", "--test-clock"}, strings.NewReader(""), &out, &out, os.Environ()); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, out.String())
	}
	code, stdout, stderr := interrupt(t, clone, filepath.Join(remote, "in-push"), syscall.SIGTERM, "run-due", "--only", "quick", "--now", "2026-11-22T02:00:30Z", "--test-clock")
	if code != errkind.ExitInterrupted {
		t.Errorf("exit %d, want %d", code, errkind.ExitInterrupted)
	}
	claims := gittest.Must(t, remote, "rev-parse", "main")
	local := gittest.Must(t, clone, "rev-parse", "main")
	wantIn(t, "stdout", stdout,
		"ran               quick @ 2026-11-22 02:00Z",
		"ledger committed "+local[:12]+", not pushed: the remote has this run's commit "+claims[:12]+", but not the 2 events after it",
		"interrupted after the claims were pushed")
	wantIn(t, "stderr", stderr, "push to origin", "was interrupted")
	if strings.Contains(stderr, "network") {
		t.Errorf("stderr blames the network:\n%s", stderr)
	}
}
