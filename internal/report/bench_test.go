package report

import (
	"fmt"

	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledger/ledgertest"
)

// BenchmarkReport is `astra report` over 2,000 schedules and a
// 1,000,000-event month: replay, the month's task history, and the page.
func BenchmarkReport(b *testing.B) {
	root := b.TempDir()
	tail, err := ledgertest.Generate(root, ledgertest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var sched strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&sched, "- {id: %s, name: s%d, cron: \"0 * * * *\", target_tool: t}\n", ledgertest.ScheduleID(i), i)
	}
	files := map[string]string{
		"schedules/s.yaml": sched.String(),
		"policies/p.yaml":  "tools:\n  t: {kind: exec, command: [./t.sh], tier: 0}\nactors:\n  - {actor: astra, scopes: [\"*\"]}\n",
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cfg, diags, err := config.Load(root)
	if err != nil || diags.Errors() > 0 {
		b.Fatalf("%v: %d errors", err, diags.Errors())
	}
	now := tail.TS.Add(time.Minute)
	var size int64
	for b.Loop() {
		d, err := Collect(cfg, ledger.Open(root, 0), now, "acme/agents", "https://github.com")
		if err != nil {
			b.Fatal(err)
		}
		w := &countWriter{}
		if err := HTML(w, d); err != nil {
			b.Fatal(err)
		}
		size = w.n
	}
	b.ReportMetric(float64(size), "page-bytes")
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
