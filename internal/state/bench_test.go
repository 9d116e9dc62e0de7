package state

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledger/ledgertest"
)

// BenchmarkReplay1M is the figure: replay of a realistic month
// (2,000 schedules, 1,000,000 events) into state. Target on 2 cores:
// under 1.5 s and 200 MB.
func BenchmarkReplay1M(b *testing.B) {
	root, err := os.MkdirTemp("", "astra-bench-replay-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(root)
	tail, err := ledgertest.Generate(root, ledgertest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	store := ledger.Open(root, 0)
	now := tail.TS.Add(time.Minute)
	runtime.GC()
	var peak uint64
	b.ResetTimer()
	for b.Loop() {
		stop := make(chan struct{})
		done := make(chan uint64)
		go func() {
			var ms runtime.MemStats
			var p uint64
			for {
				runtime.ReadMemStats(&ms)
				p = max(p, ms.HeapInuse+ms.StackInuse)
				select {
				case <-stop:
					done <- p
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		st, _, err := Replay(store, now)
		close(stop)
		peak = max(peak, <-done)
		if err != nil {
			b.Fatal(err)
		}
		if st.Events != 1_000_000 {
			b.Fatalf("replayed %d events", st.Events)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
}
