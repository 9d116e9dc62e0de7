package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/ledger/ledgertest"
)

// BenchmarkDryRunPlan is `astra run-due --dry-run` over 2,000 schedules and
// a 1,000,000-event month: replay, schedule diff, planning and gating of
// every due slot (tools are only described, as for tools without dry-run
// support). Target on 2 cores: under 2 s, dominated by the replay.
func BenchmarkDryRunPlan(b *testing.B) {
	root := b.TempDir()
	tail, err := ledgertest.Generate(root, ledgertest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var sched strings.Builder
	crons := []string{"*/5 * * * *", "0 * * * *", "30 */4 * * *", "0 9 * * *", "15 2 * * 1-5"}
	for i := range 2000 {
		fmt.Fprintf(&sched, "- {id: %s, name: s%d, cron: %q, target_tool: t%d, payload: {n: %d}}\n", ledgertest.ScheduleID(i), i, crons[i%len(crons)], i%3, i)
	}
	files := map[string]string{
		"schedules/s.yaml": sched.String(),
		"policies/p.yaml": `tools:
  t0: {kind: exec, command: [./t.sh], tier: 0}
  t1: {kind: exec, command: [./t.sh], tier: 1}
  t2: {kind: exec, command: [./t.sh], tier: 0, idempotent: true}
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3, rate_limit: {per_minute: 100000}}
`,
	}
	for p, data := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cfg, diags, err := config.Load(root)
	if err != nil || diags.Errors() > 0 {
		b.Fatalf("%v %v", err, diags)
	}
	now := tail.TS.Add(20 * time.Minute)
	r := New(cfg, Options{Root: root, Clock: func() time.Time { return now }, DryRun: true, Limit: 2000}, executor.New(executor.Options{}), nil, nil)
	b.ResetTimer()
	var due int
	for b.Loop() {
		rep, err := r.RunDue(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		due = len(rep.Outcomes)
	}
	b.ReportMetric(float64(due), "candidates")
}
