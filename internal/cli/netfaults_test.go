package cli

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/astra-gitops/astra/internal/forge/githubtest"
	"github.com/astra-gitops/astra/internal/gittest"
	"github.com/astra-gitops/astra/internal/ledger"
)

// faultProxy is git's smart HTTP (git http-backend) in front of the bare
// repositories under root, failing requests as mode says: "" passes,
// "500" answers 500, "hang" never answers.
type faultProxy struct {
	*httptest.Server
	downIf string       // while this file exists, every request answers 500
	mode   atomic.Value // string
	left   atomic.Int64 // requests still to fail; <0: all of them
	fails  atomic.Int64 // requests failed so far
}

func newFaultProxy(t *testing.T, root string) *faultProxy {
	t.Helper()
	gitExe, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	p := &faultProxy{}
	p.mode.Store("")
	backend := &cgi.Handler{Path: gitExe, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mode := p.mode.Load().(string)
		if p.downIf != "" {
			if _, err := os.Stat(p.downIf); err == nil {
				p.fails.Add(1)
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
		}
		if mode != "" && p.left.Add(-1) >= -1 {
			p.fails.Add(1)
			switch mode {
			case "500":
				http.Error(w, "boom", http.StatusInternalServerError)
				return
			case "hang":
				<-req.Context().Done()
				return
			}
		}
		backend.ServeHTTP(w, req)
	}))
	t.Cleanup(p.Close)
	return p
}

// fail makes the next n requests fail as mode says (n < 0: all).
func (p *faultProxy) fail(mode string, n int64) {
	if n < 0 {
		n = 1 << 62
	}
	p.left.Store(n - 1)
	p.mode.Store(mode)
	p.fails.Store(0)
}

// A remote that hangs makes the run stop within its git budget (exit 3,
// nothing ran), never holding the checkout; 500s are retried and the
// next run gets through; every slot runs once.
func TestRemoteFaultsThroughProxy(t *testing.T) {
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	repo := filepath.Join(root, "repo")
	side := filepath.Join(root, "side", "effects")
	if err := os.MkdirAll(filepath.Dir(side), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Must(t, root, "init", "-q", "--bare", "-b", "main", remote)
	gittest.Must(t, remote, "config", "http.receivepack", "true")
	gittest.Must(t, root, "init", "-q", "-b", "main", repo)
	files := map[string]string{
		"schedules/s.yaml": "- {id: w, name: w, interval: 20m, target_tool: effect}\n",
		"policies/p.yaml":  "tools:\n  effect: {kind: exec, command: [./effect.sh], env: [SIDE], tier: 0}\nactors:\n  - {actor: astra, scopes: [\"*\"], autonomy: L3}\n",
		"effect.sh":        "#!/bin/sh\necho \"$ASTRA_RUN_ID\" >> \"$SIDE\"\n",
	}
	for name, data := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Must(t, repo, "add", "-A")
	gittest.Must(t, repo, "commit", "-qm", "seed")
	gittest.Must(t, repo, "push", "-q", remote, "main:main")
	proxy := newFaultProxy(t, root)
	gittest.Must(t, repo, "remote", "add", "origin", proxy.URL+"/remote.git")
	gittest.Must(t, repo, "fetch", "-q", "origin")
	gittest.Must(t, repo, "branch", "-q", "-u", "origin/main")

	run := func(now string) (int, string) {
		t.Helper()
		return runDueProc(t, repo, now, "HOME="+root, "SIDE="+side,
			"ASTRA_SANDBOX_WRITABLE="+filepath.Dir(side), "ASTRA_GIT_TIMEOUT=5s", "ASTRA_GIT_BUDGET=12s")
	}
	if code, _ := run("2026-11-22T00:00:30Z"); code != 0 {
		t.Fatalf("first run exit %d", code)
	}
	// A hung remote: the run gives up within its budget, exit 3, the tool
	// did not run (its claim never reached the remote).
	proxy.fail("hang", -1)
	if code, out := run("2026-11-22T00:20:30Z"); code != 3 || !strings.Contains(out, "git.budget") {
		t.Fatalf("hung remote: exit %d", code)
	}
	if b := readFileOrNil(t, side); len(b) != 0 {
		t.Fatalf("a tool ran although its claim was never pushed: %q", b)
	}
	// 500s for a while: retried, the run gets through.
	proxy.fail("500", 3)
	if code, out := run("2026-11-22T00:40:30Z"); code != 0 || !strings.Contains(out, "retried") {
		t.Fatalf("through 500s: exit %d", code)
	}
	if proxy.fails.Load() != 3 {
		t.Fatalf("%d requests failed, want 3", proxy.fails.Load())
	}
	proxy.fail("", 0)
	if code, _ := run("2026-11-22T01:00:30Z"); code != 0 {
		t.Fatalf("clean run exit %d", code)
	}
	// Every slot ran once; the remote has every outcome.
	runs := strings.Fields(string(readFileOrNil(t, side)))
	seen := map[string]bool{}
	for _, id := range runs {
		if seen[id] {
			t.Fatalf("run %s ran twice: %v", id, runs)
		}
		seen[id] = true
	}
	completed := 0
	for _, e := range readLedger(t, gitBlob(t, remote, "main:var/schedules/2026-11.ndjson.gz")) {
		if e.Event == ledger.RunCompleted {
			completed++
		}
	}
	if completed != len(runs) || len(runs) < 2 {
		t.Fatalf("%d tool runs, %d completions on the remote", len(runs), completed)
	}
}

// A run on a fresh checkout whose tool ran, and whose outcome git could
// not push (the remote went down while the tool ran, and stayed down for
// the run's git budget), saves the outcome on a spill branch through
// GitHub's API; the next run, on another fresh checkout, records it: the
// slot ran once, and is never lost and run again.
func TestOutcomeSurvivesAStatelessRunner(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Files: map[string]string{
		"schedules/s.yaml": "- {id: w, name: w, interval: 20m, target_tool: effect}\n",
		"policies/p.yaml": "tools:\n  effect: {kind: exec, command: [sh, effect.sh], env: [SIDE, DOWN, ARM], tier: local_write}\n" +
			"actors:\n  - {actor: astra, scopes: [\"*\"], autonomy: L3}\n",
		// Armed, the tool takes the remote down as it ends.
		"effect.sh": "echo \"$ASTRA_RUN_ID\" >> \"$SIDE\"\nif [ -e \"$ARM\" ]; then rm \"$ARM\"; touch \"$DOWN\"; fi\n",
	}})
	gittest.Must(t, srv.RepoDir(), "config", "http.receivepack", "true")
	dir := t.TempDir()
	side, down, arm := filepath.Join(dir, "side"), filepath.Join(dir, "down"), filepath.Join(dir, "arm")
	proxy := newFaultProxy(t, filepath.Dir(srv.RepoDir()))
	proxy.downIf = down
	url := proxy.URL + "/" + filepath.Base(srv.RepoDir())

	run := func(now string) (int, string) {
		t.Helper()
		repo := filepath.Join(t.TempDir(), "checkout")
		gittest.Must(t, ".", "clone", "-q", url, repo)
		return runDueProc(t, repo, now, "HOME="+dir, "SIDE="+side, "DOWN="+down, "ARM="+arm,
			"ASTRA_SANDBOX_WRITABLE="+dir, "ASTRA_GIT_TIMEOUT=3s", "ASTRA_GIT_BUDGET=8s",
			"GITHUB_TOKEN="+srv.BotToken, "GITHUB_REPOSITORY="+srv.Repository(), "GITHUB_API_URL="+srv.URL)
	}
	if code, _ := run("2026-11-22T00:00:30Z"); code != 0 {
		t.Fatalf("first run exit %d", code)
	}
	if err := os.WriteFile(arm, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := run("2026-11-22T00:20:30Z")
	if code != 3 || !strings.Contains(out, "through GitHub's API") {
		t.Fatalf("the outcome was not saved through the API: exit %d", code)
	}
	if b := gittest.Must(t, srv.RepoDir(), "for-each-ref", "--format=%(refname)", "refs/heads/astra/spill/"); !strings.Contains(b, "astra/spill/") {
		t.Fatalf("no spill branch on the remote: %q", b)
	}
	if err := os.Remove(down); err != nil {
		t.Fatal(err)
	}
	for _, now := range []string{"2026-11-22T00:21:00Z", "2026-11-22T01:00:30Z"} {
		if code, _ := run(now); code != 0 {
			t.Fatalf("run at %s exit %d", now, code)
		}
	}
	perSlot := map[string]int{}
	for _, id := range strings.Fields(string(readFileOrNil(t, side))) {
		key, _, _ := strings.Cut(id, "#")
		perSlot[key]++
	}
	if perSlot["w@2026-11-22T00:20:00Z"] != 1 || len(perSlot) != 2 {
		t.Fatalf("tool runs per slot: %v", perSlot)
	}
	completed := 0
	for _, e := range readLedger(t, gitBlob(t, srv.RepoDir(), "main:var/schedules/2026-11.ndjson.gz")) {
		if e.Event == ledger.RunCompleted && e.IdempotencyKey == "w@2026-11-22T00:20:00Z" {
			completed++
		}
	}
	if completed != 1 {
		t.Fatalf("%d completions of the 00:20 slot on the remote", completed)
	}
}

func gitBlob(t *testing.T, gitDir, spec string) []byte {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", gitDir, "cat-file", "blob", spec).Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runDueProc runs astra run-due at now in repo as its own process, with
// only env beside PATH, TMPDIR and a git without the machine's config, and
// returns its exit code and output.
func runDueProc(t *testing.T, repo, now string, env ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("astra", "--repo", repo, "run-due", "--now", now, "--test-clock")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	t.Logf("run at %s:\n%s", now, out.String())
	return cmd.ProcessState.ExitCode(), out.String()
}
