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
	benchReplay(b, ledger.Open(root, 0), tail.TS.Add(time.Minute))
}

// BenchmarkReplay1MSealed is the same month sealed (every run's member
// carries a seal): replayed as an unsealed ledger reads it, and as a
// sealed one, which verifies the chain of every line and the newest seal.
func BenchmarkReplay1MSealed(b *testing.B) {
	root, err := os.MkdirTemp("", "astra-bench-replay-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(root)
	keys := testKeys(b)
	tail, err := ledgertest.Generate(root, ledgertest.Options{Seals: keys.Ledger()})
	if err != nil {
		b.Fatal(err)
	}
	store := ledger.Open(root, 0).Sealed(keys.Ledger())
	b.Run("read=unsealed", func(b *testing.B) { benchReplay(b, store.Unsealed(), tail.TS.Add(time.Minute)) })
	b.Run("read=sealed", func(b *testing.B) { benchReplay(b, store, tail.TS.Add(time.Minute)) })
}

func benchReplay(b *testing.B, store *ledger.Store, now time.Time) {
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
