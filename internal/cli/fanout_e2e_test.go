package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/gittest"
	"github.com/astra-gitops/astra/internal/runner"
)

// fanOutRepo is a bare remote whose configuration has one slow task, many
// fast ones and, when asked, two tasks sharing a lane; the schedules fire
// every 30 minutes and are known to the ledger.
type fanOutRepo struct {
	dir, remote, side string
	slow              time.Duration
}

func newFanOutRepo(tb testing.TB, fast int, slow, quick time.Duration, lane bool) *fanOutRepo {
	tb.Helper()
	dir := tb.TempDir()
	r := &fanOutRepo{dir: dir, remote: filepath.Join(dir, "remote.git"), side: filepath.Join(dir, "side"), slow: slow}
	sched := fmt.Sprintf("- {id: slow, name: slow, cron: \"*/30 * * * *\", target_tool: work, payload: {sleep: %q}, priority: 9}\n", secs(slow))
	for i := 1; i <= fast; i++ {
		sched += fmt.Sprintf("- {id: fast%02d, name: fast%02d, cron: \"*/30 * * * *\", target_tool: work, payload: {sleep: %q}}\n", i, i, secs(quick))
	}
	if lane {
		for i, prio := range []int{6, 4} {
			sched += fmt.Sprintf("- {id: lane%d, name: lane%d, cron: \"*/30 * * * *\", target_tool: work, lane: db, priority: %d, payload: {sleep: %q, lock: db}}\n",
				i+1, i+1, prio, secs(quick))
		}
	}
	seed := filepath.Join(dir, "seed")
	for p, s := range map[string]string{
		"schedules/s.yaml": sched,
		// Free runs: a plan holds the cost cap of every claim, which the
		// default daily limit would cap at ten claims of $0.50.
		"policies/p.yaml": "tools:\n  work: {kind: exec, command: [./work.sh], env: [SIDE], tier: read_only}\n" +
			"actors:\n  - {actor: astra, scopes: [\"*\"], autonomy: L3}\nbudget: {daily_limit_usd: 100, monthly_limit_usd: 1000}\n",
		// Each run appends its run id; a lane's runs take a lock directory
		// and note any overlap.
		"work.sh": `#!/bin/sh
case "$ASTRA_PAYLOAD" in *'"lock"'*)
	mkdir "$SIDE/db.lock" 2>/dev/null || echo "$ASTRA_RUN_ID" >> "$SIDE/overlap" ;;
esac
echo "$ASTRA_RUN_ID" >> "$SIDE/ran.log"
sleep "$(echo "$ASTRA_PAYLOAD" | sed 's/.*"sleep":"\([0-9.]*\)".*/\1/')"
case "$ASTRA_PAYLOAD" in *'"lock"'*) rmdir "$SIDE/db.lock" ;; esac
`,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(seed, p)), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(seed, p), []byte(s), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.Mkdir(r.side, 0o755); err != nil {
		tb.Fatal(err)
	}
	gittest.Must(tb, dir, "init", "-q", "--bare", "-b", "main", r.remote)
	gittest.Must(tb, seed, "init", "-q", "-b", "main")
	gittest.Must(tb, seed, "add", "-A")
	gittest.Must(tb, seed, "commit", "-qm", "seed")
	gittest.Must(tb, seed, "remote", "add", "origin", r.remote)
	gittest.Must(tb, seed, "push", "-q", "origin", "main")
	if out, code := r.astra(seed, "run-due", "--now", "2026-11-22T00:00:30Z", "--test-clock"); code != 0 {
		tb.Fatalf("first run-due exited %d:\n%s", code, out)
	}
	return r
}

func secs(d time.Duration) string { return fmt.Sprintf("%g", d.Seconds()) }

// astra runs astra as its own process, with a minimal environment (no
// GitHub variables of the machine running the tests).
func (r *fanOutRepo) astra(dir string, args ...string) (string, int) {
	cmd := exec.Command("astra", append([]string{"--repo", dir}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.dir, "TMPDIR=" + os.TempDir(), "SIDE=" + r.side, "ASTRA_SANDBOX_WRITABLE=" + r.side,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		return out.String() + err.Error(), -1
	}
	return out.String(), 0
}

// clone is a fresh checkout, as each job of a workflow makes.
func (r *fanOutRepo) clone(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join(r.dir, name)
	gittest.Must(tb, r.dir, "clone", "-q", "file://"+r.remote, dir)
	return dir
}

// fanOut does what the fan-out workflow does at now: a plan job, then its
// matrix, at most parallel jobs at once, each a process on a clone of its
// own. It returns the jobs, the wall time from the plan's start to the
// last job's end, and how the jobs went.
func (r *fanOutRepo) fanOut(tb testing.TB, now string, parallel int) ([]runner.Job, time.Duration, []string) {
	tb.Helper()
	start := time.Now()
	out, code := r.astra(r.clone(tb, "plan-"+now), "plan", "--json", "--limit", "256", "--max-parallel", fmt.Sprint(parallel), "--now", now, "--test-clock")
	if code != 0 {
		tb.Fatalf("plan exited %d:\n%s", code, out)
	}
	var p struct {
		Matrix struct {
			Include []runner.Job `json:"include"`
		} `json:"matrix"`
		MaxParallel int `json:"max_parallel"`
	}
	// The plan is the JSON on stdout; the progress header on stderr
	// comes first in this combined output.
	if err := json.NewDecoder(strings.NewReader(out[max(strings.Index(out, "{"), 0):])).Decode(&p); err != nil {
		tb.Fatalf("plan --json: %v\n%s", err, out)
	}
	jobs := p.Matrix.Include
	sem := make(chan struct{}, p.MaxParallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed, notes []string
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			dir := filepath.Join(r.dir, fmt.Sprintf("job-%s-%d", strings.ReplaceAll(now, ":", ""), i))
			if _, err := gittest.Run(r.dir, "clone", "-q", "file://"+r.remote, dir); err != nil {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("clone for %s: %v", j.Key, err))
				mu.Unlock()
				return
			}
			began := time.Now()
			out, code := r.astra(dir, "run", "--claim", j.Key, "--now", now, "--test-clock", "--json")
			var rep struct {
				Raced int `json:"raced"`
			}
			_ = json.Unmarshal([]byte(out), &rep)
			mu.Lock()
			defer mu.Unlock()
			notes = append(notes, fmt.Sprintf("%s: started at +%s, took %s, lost %d push race(s)", j.Key,
				began.Sub(start).Round(time.Millisecond), time.Since(began).Round(time.Millisecond), rep.Raced))
			if code != 0 {
				failed = append(failed, fmt.Sprintf("job %s exited %d:\n%s", j.Key, code, out))
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if len(failed) > 0 {
		tb.Fatalf("%d job(s) failed:\n%s", len(failed), strings.Join(failed, "\n"))
	}
	return jobs, wall, notes
}

// sequential does what the one-job workflow does at now: run-due, one
// task after another.
func (r *fanOutRepo) sequential(tb testing.TB, now string) time.Duration {
	tb.Helper()
	start := time.Now()
	if out, code := r.astra(r.clone(tb, "seq-"+now), "run-due", "--max-parallel", "1", "--limit", "100", "--now", now, "--test-clock"); code != 0 {
		tb.Fatalf("run-due exited %d:\n%s", code, out)
	}
	return time.Since(start)
}

// TestFanOutMatrix drives the fan-out workflow as GitHub would: a plan job,
// then every job of its matrix at once, each a separate process on a
// separate clone of one bare remote. Every claimed task runs exactly once,
// the lane's tasks never overlap (one per plan; the second in the next
// plan), and the ledger verifies. The wall time is logged, never asserted
// (BenchmarkFanOut measures it).
func TestFanOutMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dozens of processes")
	}
	t.Parallel()
	r := newFanOutRepo(t, 4, time.Second, 100*time.Millisecond, true)
	jobs, wall, notes := r.fanOut(t, "2026-11-22T01:00:30Z", runner.MatrixLimit) // every job at once
	more, _, _ := r.fanOut(t, "2026-11-22T01:05:30Z", 1)
	t.Logf("fan-out of %d jobs: %s wall, slowest task %s (%.2fx)\n%s", len(jobs), wall.Round(time.Millisecond), r.slow,
		wall.Seconds()/r.slow.Seconds(), strings.Join(notes, "\n"))

	var want []string
	for _, j := range append(jobs, more...) {
		want = append(want, j.Key+"#1")
	}
	if len(jobs) != 6 || len(more) != 1 || more[0].Key != "lane2@2026-11-22T01:00:00Z" || jobs[0].Key != "slow@2026-11-22T01:00:00Z" {
		t.Fatalf("first plan: %v; second plan: %v", jobs, more)
	}
	ran, _ := os.ReadFile(filepath.Join(r.side, "ran.log"))
	got := strings.Fields(string(ran))
	if len(got) != len(want) {
		t.Fatalf("ran %d times, want %d:\n%s", len(got), len(want), ran)
	}
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("%s ran %d times", id, seen[id])
		}
	}
	if b, err := os.ReadFile(filepath.Join(r.side, "overlap")); err == nil {
		t.Errorf("lane runs overlapped: %s", b)
	}

	check := r.clone(t, "check")
	if out, code := r.astra(check, "ledger", "verify"); code != 0 {
		t.Fatalf("ledger verify exited %d:\n%s", code, out)
	}
	out, _ := r.astra(check, "ledger", "cat")
	for kind, n := range map[string]int{"run.claimed": 7, "run.started": 7, "run.completed": 7, "claim.refused": 0, "run.failed": 0} {
		if c := strings.Count(out, `"event":"`+kind+`"`); c != n {
			t.Errorf("%d %s events, want %d", c, kind, n)
		}
	}
	if refs := gittest.Must(t, r.dir, "ls-remote", r.remote, "refs/heads/astra/spill/*"); refs != "" {
		t.Errorf("events spilled: %s", refs)
	}
}

// BenchmarkFanOut measures one tick of fan-out (a plan, then one job per
// task, each a process on its own clone) against the one-job workflow
// (run-due, one task after another) on the same work: many short tasks
// beside a 2 s one, where the jobs' git pushes (two each, to one branch)
// dominate, with every job at once and with the workflow's four at once;
// and longer tasks, where the work does. It reports fan-out's wall time
// over the slowest task's (1 is the ideal) and over the sequential run's.
//
//	go test -run '^$' -bench FanOut -benchtime 3x ./internal/cli
func BenchmarkFanOut(b *testing.B) {
	for _, w := range []struct {
		name           string
		fast, parallel int
		slow, quick    time.Duration
	}{
		{"short", 12, 13, 2 * time.Second, 300 * time.Millisecond},
		{"short-4-at-once", 12, 4, 2 * time.Second, 300 * time.Millisecond},
		{"long", 6, 7, 6 * time.Second, 3 * time.Second},
	} {
		b.Run(w.name, func(b *testing.B) {
			r := newFanOutRepo(b, w.fast, w.slow, w.quick, false)
			var fan, seq time.Duration
			hour := 1
			for b.Loop() {
				at := fmt.Sprintf("2026-11-22T%02d:", hour)
				jobs, wall, notes := r.fanOut(b, at+"00:30Z", w.parallel)
				if len(jobs) != w.fast+1 {
					b.Fatalf("%d jobs", len(jobs))
				}
				b.Logf("fan-out %s:\n%s", wall.Round(time.Millisecond), strings.Join(notes, "\n"))
				fan += wall
				seq += r.sequential(b, at+"30:30Z")
				hour++
			}
			n := time.Duration(hour - 1)
			b.ReportMetric((fan / n).Seconds(), "fanout-s")
			b.ReportMetric((seq / n).Seconds(), "sequential-s")
			b.ReportMetric((w.slow + time.Duration(w.fast)*w.quick).Seconds(), "work-s")
			b.ReportMetric(fan.Seconds()/float64(n)/w.slow.Seconds(), "fanout/slowest")
			b.ReportMetric(fan.Seconds()/seq.Seconds(), "fanout/sequential")
		})
	}
}
