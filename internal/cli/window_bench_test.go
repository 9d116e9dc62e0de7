package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/gittest"
)

// BenchmarkExitToOutcome measures the window in which astra dying would
// make a tool run twice: from the tool's exit to its outcome recorded in
// the local ledger (ms-to-record) and to that outcome on the remote
// (ms-to-push), for a tool whose outcome is pushed at once (not
// idempotent, tier 1), a real bare remote over file://. One op is one
// `astra run-due` that runs the tool.
func BenchmarkExitToOutcome(b *testing.B) {
	root := b.TempDir()
	remote := filepath.Join(root, "remote.git")
	repo := filepath.Join(root, "repo")
	gittest.Must(b, root, "init", "-q", "--bare", "-b", "main", remote)
	// The tool notes its exit outside the repository, where its sandbox
	// lets it write.
	side := filepath.Join(root, "side")
	if err := os.Mkdir(side, 0o755); err != nil {
		b.Fatal(err)
	}
	// The remote notes when each push arrives.
	hook := "#!/bin/sh\ndate +%s%N >> ../pushes\n"
	if err := os.WriteFile(filepath.Join(remote, "hooks", "post-receive"), []byte(hook), 0o755); err != nil {
		b.Fatal(err)
	}
	files := map[string]string{
		"schedules/s.yaml": "- {id: w, name: w, interval: 1m, target_tool: t, per_day_budget: 100000}\n",
		"policies/p.yaml":  "tools:\n  t: {kind: exec, command: [./t.sh], tier: local_write}\nactors:\n  - {actor: astra, scopes: [\"*\"], autonomy: L3}\n",
		// Its last act: note when it exits.
		"t.sh": "#!/bin/sh\necho work\nexec date +%s%N > ../side/exit\n",
	}
	gittest.Must(b, root, "init", "-q", "-b", "main", repo)
	for name, data := range files {
		p := filepath.Join(repo, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	gittest.Must(b, repo, "add", "-A")
	gittest.Must(b, repo, "commit", "-qm", "seed")
	gittest.Must(b, repo, "remote", "add", "origin", remote)
	gittest.Must(b, repo, "push", "-q", "origin", "main")
	at := time.Date(2026, 11, 22, 0, 0, 30, 0, time.UTC)
	run := func() {
		var out bytes.Buffer
		if code := Execute(context.Background(), []string{"--repo", repo, "--now", at.Format(time.RFC3339), "--test-clock", "run-due"}, strings.NewReader(""), &out, &out, append(os.Environ(), "ASTRA_SANDBOX_WRITABLE="+side)); code != 0 {
			b.Fatalf("run-due exited %d:\n%s", code, out.String())
		}
		at = at.Add(time.Minute)
	}
	run() // the schedule is created
	var toRecord, toPush time.Duration
	ledgerFile := filepath.Join(repo, "var", "schedules", "2026-11.ndjson.gz")
	b.ResetTimer()
	for range b.N {
		// File times are too coarse: watch the ledger grow instead.
		grew := make(chan []time.Time)
		stop := make(chan struct{})
		go func() {
			var at []time.Time
			last := int64(-1)
			for {
				select {
				case <-stop:
					grew <- at
					return
				default:
				}
				if fi, err := os.Stat(ledgerFile); err == nil && fi.Size() != last {
					last = fi.Size()
					at = append(at, time.Now())
				}
				time.Sleep(50 * time.Microsecond)
			}
		}()
		run()
		close(stop)
		appends := <-grew
		b.StopTimer()
		exit := nanos(b, filepath.Join(side, "exit"))
		for _, t := range appends {
			if t.After(exit) {
				toRecord += t.Sub(exit)
				break
			}
		}
		pushed := time.Time{}
		for _, line := range strings.Fields(readFileB(b, filepath.Join(root, "pushes"))) {
			if t := unixNanos(b, line); t.After(exit) && (pushed.IsZero() || t.Before(pushed)) {
				pushed = t
			}
		}
		toPush += pushed.Sub(exit)
		b.StartTimer()
	}
	b.ReportMetric(float64(toRecord.Microseconds())/1000/float64(b.N), "ms-to-record")
	b.ReportMetric(float64(toPush.Microseconds())/1000/float64(b.N), "ms-to-push")
}

func readFileB(b *testing.B, p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

func nanos(b *testing.B, p string) time.Time { return unixNanos(b, strings.TrimSpace(readFileB(b, p))) }

func unixNanos(b *testing.B, s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		b.Fatal(fmt.Errorf("%q: %w", s, err))
	}
	return time.Unix(0, n)
}
