package ledger_test

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledger/ledgertest"
)

// bigLedger is generated once per test binary: 2,000 schedules and
// 1,000,000 events in one month (the realistic size).
var (
	bigOnce sync.Once
	bigRoot string
	bigErr  error
)

func big(b *testing.B) (string, []ledger.Segment) {
	bigOnce.Do(func() {
		bigRoot, bigErr = os.MkdirTemp("", "astra-bench-ledger-")
		if bigErr == nil {
			_, bigErr = ledgertest.Generate(bigRoot, ledgertest.Options{})
		}
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	segs, err := ledger.Open(bigRoot, 0).Segments()
	if err != nil {
		b.Fatal(err)
	}
	return bigRoot, segs
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigRoot != "" {
		os.RemoveAll(bigRoot)
	}
	os.Exit(code)
}

func reportSize(b *testing.B, segs []ledger.Segment, events int64) {
	var size int64
	for _, s := range segs {
		size += s.Size
	}
	b.ReportMetric(float64(size)/float64(events), "gz-bytes/event")
	b.ReportMetric(float64(events)/b.Elapsed().Seconds()*float64(b.N), "events/s")
}

// peakHeap samples the heap while f runs, the closest in-process figure to
// the replay's peak memory.
func peakHeap(f func()) uint64 {
	stop := make(chan struct{})
	var peak uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse+ms.StackInuse)
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak
}

// BenchmarkScan is a full read of the month: decompress, decode, check seq
// and hand every event over in order.
func BenchmarkScan(b *testing.B) {
	root, segs := big(b)
	var n int64
	var peak uint64
	b.ResetTimer()
	for b.Loop() {
		n = 0
		peak = max(peak, peakHeap(func() {
			if _, err := ledger.Scan(root, segs, ledger.ScanOptions{}, func(*ledger.Event) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
		}))
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
	reportSize(b, segs, n)
}

// BenchmarkScanVerify adds the sha256 chain check of every line.
func BenchmarkScanVerify(b *testing.B) {
	root, segs := big(b)
	for b.Loop() {
		if _, err := ledger.Scan(root, segs, ledger.ScanOptions{Verify: true}, func(*ledger.Event) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyAnchors checks the head anchor of a realistic ledger: what
// `ledger verify` adds to the chain check (one pass over the newest file).
func BenchmarkVerifyAnchors(b *testing.B) {
	root, segs := big(b)
	tail, err := ledger.Scan(root, segs, ledger.ScanOptions{}, func(*ledger.Event) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	s := ledger.Open(root, 0)
	anchors := []ledger.Anchor{tail.Anchor()}
	for b.Loop() {
		if err := s.VerifyAnchors(segs, anchors); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tail.Segment.Size)/(1<<20), "file-MiB")
}

// BenchmarkGunzip is the floor: decompressing the same files and nothing
// else, one goroutine per core as Scan uses.
func BenchmarkGunzip(b *testing.B) {
	root, segs := big(b)
	for b.Loop() {
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for _, s := range segs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				f, err := os.Open(filepath.Join(root, s.Path))
				if err != nil {
					panic(err)
				}
				defer f.Close()
				zr, err := gzip.NewReader(bufio.NewReaderSize(f, 256<<10))
				if err != nil {
					panic(err)
				}
				if _, err := io.Copy(io.Discard, zr); err != nil {
					panic(err)
				}
			}()
		}
		wg.Wait()
	}
}

// BenchmarkGunzipSerial is single-threaded decompression, the plain zcat cost.
func BenchmarkGunzipSerial(b *testing.B) {
	root, segs := big(b)
	for b.Loop() {
		for _, s := range segs {
			f, err := os.Open(filepath.Join(root, s.Path))
			if err != nil {
				b.Fatal(err)
			}
			zr, err := gzip.NewReader(bufio.NewReaderSize(f, 256<<10))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, zr); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	}
}

// BenchmarkAppend100 appends a run's worth of events (100) to the
// 1M-event ledger: the cost must not depend on the month's size.
func BenchmarkAppend100(b *testing.B) { benchAppend100(b, nil) }

// BenchmarkAppend100Sealed is the same append to a sealed ledger: the
// member is sealed with an Ed25519 ledger key.
func BenchmarkAppend100Sealed(b *testing.B) {
	keys, _ := newKeys(b)
	benchAppend100(b, keys.Ledger())
}

func benchAppend100(b *testing.B, seals *ledger.Seals) {
	root, segs := big(b)
	// Work on a copy of the last segment only: that is all an append touches.
	dir := b.TempDir()
	last := segs[len(segs)-1]
	data, err := os.ReadFile(filepath.Join(root, last.Path))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ledger.Dir), 0o755); err != nil {
		b.Fatal(err)
	}
	tail, err := ledger.Scan(root, segs[len(segs)-1:], ledger.ScanOptions{}, func(*ledger.Event) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	store := ledger.Open(dir, 1<<40).Sealed(seals) // never roll over: measure appends to a big file
	now := tail.TS
	evs := make([]*ledger.Event, 100)
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if err := os.WriteFile(filepath.Join(dir, last.Path), data, 0o644); err != nil {
			b.Fatal(err)
		}
		t := tail
		t.Segment.Size = int64(len(data))
		for i := range evs {
			evs[i] = &ledger.Event{TS: now, Event: ledger.RunCompleted, ScheduleID: "sch_00000001", IdempotencyKey: "sch_00000001@x",
				Actor: "astra", Tool: "execute_goal", Status: "ok", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Mode: ledger.ModeScheduled}
		}
		b.StartTimer()
		seg, _ := store.Target(t, now)
		if _, err := store.Append(t, seg, evs); err != nil {
			b.Fatal(err)
		}
	}
}
