//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/gittest"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledger/ledgertest"
)

// The whole-process benchmarks: astra as a user runs it (the release
// binary, a fresh process each time) on a repository holding a generated
// month (2,000 schedules, 20 of them every five minutes), after a first
// run wrote the state snapshot and the generated backlog was decided. Each
// reports the process's wall time as ns/op and the largest peak resident
// memory the kernel saw of it (peak-RSS-MB), beside the reference a
// command should be measured against (reading the month with zcat).

// costMonth is such a repository.
type costMonth struct {
	dir   string
	now   time.Time // the last run's clock
	trace string    // a trace id of one of the newest runs
}

var (
	astraBinOnce sync.Once
	astraBinPath string
	astraBinErr  error
)

// astraBin builds the astra command once per test binary, as a release
// builds it (no test packages linked in).
func astraBin(b *testing.B) string {
	astraBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "astra-bench-bin-")
		if err != nil {
			astraBinErr = err
			return
		}
		astraBinPath = filepath.Join(dir, "astra")
		out, err := exec.Command("go", "build", "-o", astraBinPath, "github.com/astra-gitops/astra/cmd/astra").CombinedOutput()
		if err != nil {
			astraBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if astraBinErr != nil {
		b.Fatal(astraBinErr)
	}
	return astraBinPath
}

// newCostMonth generates the month at dir and makes it a repository
// whose runs start from the snapshot. With health, one of the schedules
// due every five minutes is the example astra init writes, a look at
// recent failures (the tasks_last_failed builtin, which reads the
// ledger's history); without, all 20 run `true`, as runner.BenchmarkTick
// has them. With ASTRA_BENCH_MONTH set, the month with health is kept in
// that directory, those without in DIR-tick-EVENTS, and reused by later
// runs.
func newCostMonth(b *testing.B, dir string, events int, health bool) *costMonth {
	b.Helper()
	if keep := os.Getenv("ASTRA_BENCH_MONTH"); keep != "" {
		dir = keep
		if !health {
			dir = fmt.Sprintf("%s-tick-%d", keep, events)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return loadCostMonth(b, dir)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	gittest.Must(b, dir, "init", "-q", "-b", "main")
	tail, err := ledgertest.Generate(dir, ledgertest.Options{Events: events})
	if err != nil {
		b.Fatal(err)
	}
	var sched strings.Builder
	for i := range 2000 {
		cron := "0 9 1 1 *"
		if i < 20 {
			cron = "*/5 * * * *"
		}
		tool := "ok"
		if i == 0 && health {
			tool = "tasks_last_failed, payload: {limit: 5}"
		}
		fmt.Fprintf(&sched, "- {id: %s, name: s%d, cron: %q, target_tool: %s}\n", ledgertest.ScheduleID(i), i, cron, tool)
	}
	files := map[string]string{
		"schedules/s.yaml": sched.String(),
		"policies/p.yaml": "tools:\n  ok: {kind: exec, command: [\"true\"], tier: 0}\n" +
			"actors:\n  - {actor: astra, scopes: [\"*\"], autonomy: L3, rate_limit: {per_minute: 100000}}\n" +
			"budget: {daily_limit_usd: 100000, monthly_limit_usd: 1000000}\n",
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gittest.Must(b, dir, "add", "-A")
	gittest.Must(b, dir, "commit", "-q", "-m", "a month")
	m := &costMonth{dir: dir, now: tail.TS.Add(time.Minute)}
	m.tick(b) // records the schedules and writes the snapshot
	// The generated month ends with claims and retries left open: decide
	// them first, so that every size is measured in the steady state.
	for drained := 0; ; drained++ {
		m.now = m.now.Add(5 * time.Minute)
		if out := m.tick(b); !strings.Contains(out, "missed") && !strings.Contains(out, "lost") {
			break
		}
		if drained == 100 {
			b.Fatal("the generated backlog is not drained after 100 runs")
		}
	}
	return loadCostMonth(b, dir)
}

// loadCostMonth reads the clock of a month's last run (its events' time)
// and a trace of its newest runs from the ledger.
func loadCostMonth(b *testing.B, dir string) *costMonth {
	segs, err := ledger.Open(dir, 0).Segments()
	if err != nil || len(segs) == 0 {
		b.Fatalf("ledger of %s: %v", dir, err)
	}
	m := &costMonth{dir: dir}
	m.now, m.trace = lastRun(b, dir, segs[len(segs)-1])
	if m.trace == "" {
		m.now, m.trace = lastRun(b, dir, segs[len(segs)-2])
	}
	return m
}

func lastRun(b *testing.B, dir string, seg ledger.Segment) (now time.Time, trace string) {
	b.Helper()
	tail, err := ledger.Scan(dir, []ledger.Segment{seg}, ledger.ScanOptions{SkipOutput: true}, func(e *ledger.Event) error {
		if e.Event == ledger.RunCompleted && e.TraceID != "" {
			trace = e.TraceID
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return tail.TS, trace
}

// tick is one recording run at m.now, committed (nothing to push to).
func (m *costMonth) tick(b *testing.B) string {
	b.Helper()
	out, _, _, _ := m.astra(b, "run-due", "--no-push", "--limit", "20", "--max-parallel", "4", "--now", m.now.Format(time.RFC3339), "--test-clock")
	return out
}

// astra runs astra in m and returns what it printed, its wall time, its
// peak resident memory and its CPU time; it fails b unless astra exits 0.
func (m *costMonth) astra(b *testing.B, args ...string) (string, time.Duration, int64, time.Duration) {
	b.Helper()
	return runProcess(b, m.dir, astraBin(b), append([]string{"--repo", m.dir}, args...)...)
}

// runProcess runs a command in dir with a bare environment and returns
// what it printed, its wall time, and the peak resident memory and the CPU
// time (user and system) of it and the children it waited for; CPU time is
// what compares between runs on a machine others load. The figures come
// from GNU time, a small
// process of its own: a child of the benchmark would inherit the
// benchmark's own peak (Go starts children with vfork, and Linux carries
// the peak over exec).
func runProcess(b *testing.B, dir, name string, args ...string) (string, time.Duration, int64, time.Duration) {
	b.Helper()
	const gnuTime = "/usr/bin/time"
	if _, err := os.Stat(gnuTime); err != nil {
		b.Skipf("no %s to read peak memory with: %v", gnuTime, err)
	}
	rssFile := filepath.Join(b.TempDir(), "rss")
	cmd := exec.Command(gnuTime, append([]string{"-o", rssFile, "-f", "%M %U %S", name}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "TMPDIR=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		b.Fatalf("%s %s: %v\n%.3000s", name, strings.Join(args, " "), err, out.String())
	}
	data, err := os.ReadFile(rssFile)
	if err != nil {
		b.Fatal(err)
	}
	var kib int64
	var user, sys float64
	if _, err := fmt.Sscanf(string(data), "%d %f %f", &kib, &user, &sys); err != nil {
		b.Fatalf("GNU time wrote %q: %v", data, err)
	}
	return out.String(), wall, kib << 10, time.Duration((user + sys) * float64(time.Second))
}

// copyMonth copies m (git's files, times and all) to dir.
func (m *costMonth) copy(b *testing.B, dir string) *costMonth {
	b.Helper()
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", m.dir, dir).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
	c := *m
	c.dir = dir
	return &c
}

// reportPeak reports the largest peak RSS seen, in MiB, and the mean CPU
// time of a run.
func reportPeak(b *testing.B, peak int64, cpu time.Duration) {
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkHistory: the commands that read the ledger's history, whole
// process, on the 1M-event month, beside the references: reading the
// month with `zcat | tail -5` (what a --limit query is measured
// against) and gunzipping its files two at a time (`ledger verify`'s).
func BenchmarkHistory(b *testing.B) {
	m := newCostMonth(b, filepath.Join(b.TempDir(), "month"), 1_000_000, true)
	files, err := filepath.Glob(filepath.Join(m.dir, ledger.Dir, "*.ndjson.gz"))
	if err != nil || len(files) == 0 {
		b.Fatalf("ledger files: %v %v", files, err)
	}
	site := b.TempDir()
	now := m.now.Format(time.RFC3339)
	next := m.now.Add(5 * time.Minute).Format(time.RFC3339)
	cases := []struct {
		name string
		run  func(b *testing.B) (int64, time.Duration)
	}{
		{"zcat-tail", func(b *testing.B) (int64, time.Duration) {
			_, _, rss, cpu := runProcess(b, m.dir, "sh", "-c", "zcat "+strings.Join(files, " ")+" | tail -5 >/dev/null")
			return rss, cpu
		}},
		{"gunzip-parallel", func(b *testing.B) (int64, time.Duration) {
			_, _, rss, cpu := runProcess(b, m.dir, "sh", "-c", "ls "+filepath.Join(ledger.Dir, "*.ndjson.gz")+" | xargs -P 2 -n 1 zcat >/dev/null")
			return rss, cpu
		}},
		{"tasks-list-5", astraCase(m, "--now", now, "tasks", "list", "--limit", "5")},
		{"tasks-last-failed-5", astraCase(m, "--now", now, "tasks", "last-failed", "--limit", "5")},
		{"tasks-by-trace", astraCase(m, "--now", now, "tasks", "by-trace", m.trace)},
		{"tasks-list-all", astraCase(m, "--now", now, "tasks", "list", "--status", "all", "--limit", "0", "--json")},
		{"builtin-last-failed-dry-run", astraCase(m, "--now", next, "run-due", "--dry-run", "--only", "s0")},
		{"report", astraCase(m, "--now", now, "report", "--out", site)},
		{"verify", astraCase(m, "ledger", "verify")},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var peak int64
			var cpu time.Duration
			for b.Loop() {
				rss, t := c.run(b)
				peak, cpu = max(peak, rss), cpu+t
			}
			reportPeak(b, peak, cpu)
		})
	}
}

func astraCase(m *costMonth, args ...string) func(b *testing.B) (int64, time.Duration) {
	return func(b *testing.B) (int64, time.Duration) {
		_, _, rss, cpu := m.astra(b, args...)
		return rss, cpu
	}
}

// BenchmarkTickProcess: the recording tick (`run-due --limit 20`, 20 runs
// of `true`, commit, nothing to push) as a whole process on a month of
// 10k and of 1M events; each run from a copy of the same month, five
// minutes after the one before.
func BenchmarkTickProcess(b *testing.B) {
	for _, events := range []int{10_000, 1_000_000} {
		var month *costMonth
		dir := b.TempDir()
		b.Run(fmt.Sprintf("events=%d", events), func(b *testing.B) {
			if month == nil {
				month = newCostMonth(b, filepath.Join(dir, "month"), events, false)
			}
			repo := month.copy(b, filepath.Join(dir, "run"))
			var peak int64
			var cpu time.Duration
			for b.Loop() {
				repo.now = repo.now.Add(5 * time.Minute)
				out, _, rss, c := repo.astra(b, "run-due", "--no-push", "--limit", "20", "--max-parallel", "4", "--now", repo.now.Format(time.RFC3339), "--test-clock")
				if !strings.Contains(out, "ran") {
					b.Fatalf("nothing ran:\n%s", out)
				}
				peak, cpu = max(peak, rss), cpu+c
			}
			reportPeak(b, peak, cpu)
		})
	}
}
